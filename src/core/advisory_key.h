// Advisory-lock keys, as pure functions. dlock.key(name) is the first 8
// bytes of the SHA-256 digest of the name's UTF-8 bytes, read big-endian as
// a signed 64-bit integer: reproducible in any language, and with 64 bits
// collisions are negligible (unlike the 32-bit hashtext()).
#pragma once
#include "plain_cpp.h"

#include <cstdint>

namespace dlock {

// The key for a SHA-256 digest of a name (see above).
std::int64_t key_from_sha256(const std::uint8_t (&digest)[32]);

// The two 32-bit halves PostgreSQL keeps a bigint advisory key in
// (pg_locks.classid = high, pg_locks.objid = low).
struct KeyHalves {
  std::uint32_t high;
  std::uint32_t low;
};
KeyHalves split_key(std::int64_t key);

}  // namespace dlock
