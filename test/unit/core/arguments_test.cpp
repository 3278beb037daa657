// Unit tests of src/core/arguments: names, owners, reasons and durations
// with their limits.
#include "arguments.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "errors.h"
#include "test_support.h"

namespace dlock {
namespace {

using namespace dlock::testing;

constexpr Micros kMaxTtl = 24 * kHour;  // dlock.max_ttl's default

TEST(CheckName, EmptyIsRejected) { EXPECT_SQLSTATE(check_name(""), "22023"); }

TEST(CheckName, OneByteIsAccepted) { EXPECT_NO_THROW(check_name("a")); }

TEST(CheckName, Exactly255BytesIsAccepted) {
  EXPECT_NO_THROW(check_name(std::string(255, 'n')));
}

TEST(CheckName, 256BytesIsRejected) {
  EXPECT_SQLSTATE(check_name(std::string(256, 'n')), "22023");
  EXPECT_SQLSTATE(check_name(std::string(10'000, 'n')), "22023");
}

TEST(CheckName, LimitCountsBytesNotCharacters) {
  const std::string euro = "\xE2\x82\xAC";  // U+20AC, 3 bytes in UTF-8
  const std::string e_acute = "\xC3\xA9";   // U+00E9, 2 bytes in UTF-8
  ASSERT_EQ(repeat(euro, 85).size(), 255u);
  EXPECT_NO_THROW(check_name(repeat(euro, 85)));
  // 86 characters, 258 bytes.
  EXPECT_SQLSTATE(check_name(repeat(euro, 86)), "22023");
  // 128 characters, 256 bytes: fewer characters than the limit, too many bytes.
  ASSERT_EQ(repeat(e_acute, 128).size(), 256u);
  EXPECT_SQLSTATE(check_name(repeat(e_acute, 128)), "22023");
  // 127 two-byte characters and one ASCII byte: 255 bytes.
  EXPECT_NO_THROW(check_name(repeat(e_acute, 127) + "x"));
}

TEST(CheckName, TooLongDetailGivesTheSize) {
  try {
    check_name(std::string(300, 'n'));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.sqlstate()), "22023");
    EXPECT_NE(e.detail().find("300"), std::string::npos) << e.detail();
    EXPECT_NE(e.detail().find("255"), std::string::npos) << e.detail();
  }
}

TEST(CheckOwner, EmptyIsRejectedWithHint) {
  EXPECT_SQLSTATE(check_owner(""), "22023");
  try {
    check_owner("");
  } catch (const Error& e) {
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(CheckOwner, Exactly255BytesIsAccepted) {
  EXPECT_NO_THROW(check_owner("w"));
  EXPECT_NO_THROW(check_owner(std::string(255, 'w')));
}

TEST(CheckOwner, 256BytesIsRejected) {
  EXPECT_SQLSTATE(check_owner(std::string(256, 'w')), "22023");
}

TEST(CheckOwner, LimitCountsBytesNotCharacters) {
  const std::string euro = "\xE2\x82\xAC";
  const std::string e_acute = "\xC3\xA9";
  EXPECT_NO_THROW(check_owner(repeat(euro, 85)));
  EXPECT_SQLSTATE(check_owner(repeat(euro, 86)), "22023");
  EXPECT_SQLSTATE(check_owner(repeat(e_acute, 128)), "22023");
}

TEST(CheckTtl, ZeroIsRejected) {
  EXPECT_SQLSTATE(check_ttl(iv(0), kMaxTtl), "22023");
  // '1 day -24 hours' is zero as well.
  EXPECT_SQLSTATE(check_ttl(iv(-24 * kHour, 1), kMaxTtl), "22023");
}

TEST(CheckTtl, NegativeIsRejected) {
  EXPECT_SQLSTATE(check_ttl(iv(-1), kMaxTtl), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(0, -1), kMaxTtl), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, -1), kMaxTtl), "22023");
  // '1 day -24:00:00.000001' is one microsecond short of zero.
  EXPECT_SQLSTATE(check_ttl(iv(-24 * kHour - 1, 1), kMaxTtl), "22023");
}

TEST(CheckTtl, OneMicrosecondIsAccepted) {
  EXPECT_EQ(check_ttl(iv(1), kMaxTtl), 1);
  EXPECT_EQ(check_ttl(iv(-24 * kHour + 1, 1), kMaxTtl), 1);
}

TEST(CheckTtl, ExactlyMaxIsAccepted) {
  EXPECT_EQ(check_ttl(iv(kMaxTtl), kMaxTtl), kMaxTtl);
  EXPECT_EQ(check_ttl(iv(0, 1), kMaxTtl), kMaxTtl);
}

TEST(CheckTtl, MaxPlusOneIsRejected) {
  EXPECT_SQLSTATE(check_ttl(iv(kMaxTtl + 1), kMaxTtl), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(1, 1), kMaxTtl), "22023");
  try {
    check_ttl(iv(kMaxTtl + 1), kMaxTtl);
  } catch (const Error& e) {
    EXPECT_FALSE(e.detail().empty());
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(CheckTtl, MonthCountsAs30DaysAgainstMax) {
  const Micros thirty_days = 30 * kMicrosPerDay;
  EXPECT_EQ(check_ttl(iv(0, 0, 1), thirty_days), thirty_days);
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, 1), thirty_days - 1), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, 1), kMaxTtl), "22023");
  // '1 mon 1 day' is 31 days; '1 mon -29 days' is one day.
  EXPECT_SQLSTATE(check_ttl(iv(0, 1, 1), thirty_days), "22023");
  EXPECT_EQ(check_ttl(iv(0, -29, 1), kMaxTtl), kMaxTtl);
}

TEST(CheckTtl, OverflowIs22023) {
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, kInt32Max), kInt64Max), "22023");
}

TEST(CheckTtl, MaxTtlOfOneMicrosecond) {
  EXPECT_EQ(check_ttl(iv(1), 1), 1);
  EXPECT_SQLSTATE(check_ttl(iv(2), 1), "22023");
}

TEST(CheckTimeout, ZeroIsAccepted) {
  EXPECT_EQ(check_timeout(iv(0)), 0);
  EXPECT_EQ(check_timeout(iv(-24 * kHour, 1)), 0);
}

TEST(CheckTimeout, PositiveIsExact) {
  EXPECT_EQ(check_timeout(iv(1)), 1);
  EXPECT_EQ(check_timeout(iv(5 * kMicrosPerSecond)), 5 * kMicrosPerSecond);
  EXPECT_EQ(check_timeout(iv(0, 0, 1)), 30 * kMicrosPerDay);
}

TEST(CheckTimeout, NegativeIsRejected) {
  EXPECT_SQLSTATE(check_timeout(iv(-1)), "22023");
  EXPECT_SQLSTATE(check_timeout(iv(0, -1)), "22023");
  EXPECT_SQLSTATE(check_timeout(iv(0, 0, -1)), "22023");
}

TEST(CheckTimeout, OverflowIs22023) {
  EXPECT_SQLSTATE(check_timeout(iv(kInt64Max, 1)), "22023");
}

TEST(CheckOptionalDuration, AbsentZeroPositiveAndLimits) {
  EXPECT_EQ(check_optional_duration(std::nullopt, "lock_delay", 1'000), 0);
  EXPECT_EQ(check_optional_duration(iv(0), "lock_delay", 1'000), 0);
  EXPECT_EQ(check_optional_duration(iv(1'000), "lock_delay", 1'000), 1'000);
  EXPECT_EQ(
      sqlstate_of([] { check_optional_duration(iv(-1), "lock_delay", 1'000); }),
      "22023");
  EXPECT_EQ(sqlstate_of(
                [] { check_optional_duration(iv(1'001), "max_hold", 1'000); }),
            "22023");
}

TEST(CheckReason, EmptyAndUpTo500BytesAreAccepted) {
  EXPECT_NO_THROW(check_reason(""));
  EXPECT_NO_THROW(check_reason(repeat("r", 500)));
  // 250 two-byte characters: exactly 500 bytes.
  EXPECT_NO_THROW(check_reason(repeat("\xC3\xA9", 250)));
}

TEST(CheckReason, LongerIsRejectedWithTheSize) {
  Error e = error_of([] { check_reason(repeat("\xC3\xA9", 251)); });
  EXPECT_STREQ(e.sqlstate(), "22023");
  EXPECT_STREQ(e.what(), "reason is too long");
  EXPECT_EQ(e.detail(), "The reason has 502 bytes; the limit is 500.");
}

TEST(CheckMinHold, AtMostMaxHoldWhenThereIsOne) {
  EXPECT_NO_THROW(check_min_hold(0, 0));
  EXPECT_NO_THROW(check_min_hold(5'000'000, 0));  // no max_hold
  EXPECT_NO_THROW(check_min_hold(5'000'000, 5'000'000));
  Error e = error_of([] { check_min_hold(5'000'001, 5'000'000); });
  EXPECT_STREQ(e.sqlstate(), "22023");
  EXPECT_STREQ(e.what(), "min_hold must not exceed max_hold");
}

TEST(CheckPermits, AbsentIsAnOrdinaryLease) {
  EXPECT_EQ(check_permits(std::nullopt, false), 1);
  EXPECT_EQ(check_permits(std::nullopt, true), 1);
}

TEST(CheckPermits, OneToAThousand) {
  EXPECT_EQ(check_permits(1, false), 1);
  EXPECT_EQ(check_permits(1000, false), 1000);
  Error zero = error_of([] { check_permits(0, false); });
  EXPECT_STREQ(zero.sqlstate(), "22023");
  EXPECT_STREQ(zero.what(), "permits must be between 1 and 1000");
  EXPECT_EQ(zero.detail(), "permits is 0.");
  EXPECT_EQ(sqlstate_of([] { check_permits(1001, false); }), "22023");
  EXPECT_EQ(sqlstate_of([] { check_permits(-5, false); }), "22023");
  EXPECT_EQ(sqlstate_of([] { check_permits(int64_t{1} << 40, false); }),
            "22023");
}

TEST(CheckPermits, NeverWithShared) {
  Error e = error_of([] { check_permits(3, true); });
  EXPECT_STREQ(e.sqlstate(), "22023");
  EXPECT_STREQ(e.what(), "permits cannot be given with shared => true");
  EXPECT_EQ(sqlstate_of([] { check_permits(1, true); }), "22023");
}

}  // namespace
}  // namespace dlock
