// Unit tests of src/core/advisory: the key of a SHA-256 digest and its
// halves as pg_locks shows them.
#include "advisory_key.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace dlock {
namespace {

TEST(KeyFromSha256, FirstEightBytesBigEndianSigned) {
  // SHA-256("nightly-report") begins 67 43 ba 10 a2 b2 c4 87.
  std::uint8_t digest[32] = {0x67, 0x43, 0xba, 0x10, 0xa2,
                             0xb2, 0xc4, 0x87, 0xff, 0xff};
  EXPECT_EQ(key_from_sha256(digest), 7440995589958059143);
  std::uint8_t high_bit[32] = {0x80};
  EXPECT_EQ(key_from_sha256(high_bit),
            std::numeric_limits<std::int64_t>::min());
  std::uint8_t all_ones[32] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(key_from_sha256(all_ones), -1);
  std::uint8_t zero[32] = {};
  EXPECT_EQ(key_from_sha256(zero), 0);
}

TEST(SplitKey, HalvesAsPgLocksShowsThem) {
  KeyHalves h = split_key(4294967303);  // 2^32 + 7
  EXPECT_EQ(h.high, 1u);
  EXPECT_EQ(h.low, 7u);
  h = split_key(-1);
  EXPECT_EQ(h.high, 0xffffffffu);
  EXPECT_EQ(h.low, 0xffffffffu);
  h = split_key(std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(h.high, 0x80000000u);
  EXPECT_EQ(h.low, 0u);
  h = split_key(42);
  EXPECT_EQ(h.high, 0u);
  EXPECT_EQ(h.low, 42u);
}

}  // namespace
}  // namespace dlock
