#include "advisory_key.h"

namespace dlock {

std::int64_t key_from_sha256(const std::uint8_t (&digest)[32]) {
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i) key = (key << 8) | digest[i];
  return static_cast<std::int64_t>(key);
}

KeyHalves split_key(std::int64_t key) {
  std::uint64_t bits = static_cast<std::uint64_t>(key);
  return KeyHalves{static_cast<std::uint32_t>(bits >> 32),
                   static_cast<std::uint32_t>(bits)};
}

}  // namespace dlock
