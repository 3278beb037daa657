// Unit tests of src/core/duration: intervals as exact durations, and
// durations in messages.
#include "duration.h"

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

TEST(Duration, ZeroIsZero) { EXPECT_EQ(duration(iv(0), "ttl"), 0); }

TEST(Duration, TimePartIsMicroseconds) {
  EXPECT_EQ(duration(iv(1), "ttl"), 1);
  EXPECT_EQ(duration(iv(1'500'000), "ttl"), 1'500'000);
}

TEST(Duration, DayIs24Hours) {
  EXPECT_EQ(duration(iv(0, 1), "ttl"), 86'400'000'000);
  EXPECT_EQ(duration(iv(0, 1), "ttl"), 24 * kHour);
  EXPECT_EQ(duration(iv(0, 7), "ttl"), 7 * 86'400'000'000);
}

TEST(Duration, MonthIs30Days) {
  EXPECT_EQ(duration(iv(0, 0, 1), "ttl"), 2'592'000'000'000);
  EXPECT_EQ(duration(iv(0, 0, 1), "ttl"), duration(iv(0, 30), "ttl"));
  EXPECT_EQ(duration(iv(0, 0, 12), "ttl"), 360 * kMicrosPerDay);
}

TEST(Duration, FieldsAdd) {
  // 1 mon 2 days 03:00:00.000004
  EXPECT_EQ(duration(iv(3 * kHour + 4, 2, 1), "ttl"),
            32 * kMicrosPerDay + 3 * kHour + 4);
}

TEST(Duration, NegativeParts) {
  EXPECT_EQ(duration(iv(-1), "ttl"), -1);
  EXPECT_EQ(duration(iv(0, -1), "ttl"), -kMicrosPerDay);
  EXPECT_EQ(duration(iv(0, 0, -1), "ttl"), -30 * kMicrosPerDay);
  // '1 day -1 hour' is 23 hours; '1 mon -30 days' is nothing.
  EXPECT_EQ(duration(iv(-kHour, 1), "ttl"), 23 * kHour);
  EXPECT_EQ(duration(iv(0, -30, 1), "ttl"), 0);
  // '-1 day +25:00:00' is one hour.
  EXPECT_EQ(duration(iv(25 * kHour, -1), "ttl"), kHour);
}

TEST(Duration, LargestFieldsThatFit) {
  // 106751991 days is the most whole days that fit in int64 microseconds.
  const Micros day_part = 106'751'991 * kMicrosPerDay;
  EXPECT_EQ(duration(iv(0, 106'751'991), "ttl"), day_part);
  EXPECT_EQ(duration(iv(kInt64Max - day_part, 106'751'991), "ttl"), kInt64Max);
  EXPECT_EQ(duration(iv(kInt64Max), "ttl"), kInt64Max);
  EXPECT_EQ(duration(iv(kInt64Min), "ttl"), kInt64Min);
}

TEST(Duration, OverflowIs22023) {
  const Micros day_part = 106'751'991 * kMicrosPerDay;
  // The sum of the parts overflows.
  EXPECT_SQLSTATE(duration(iv(kInt64Max - day_part + 1, 106'751'991), "ttl"),
                  "22023");
  EXPECT_SQLSTATE(duration(iv(kInt64Max, 1), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(kInt64Min, -1), "ttl"), "22023");
  // The day part alone overflows.
  EXPECT_SQLSTATE(duration(iv(0, 106'751'992), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, kInt32Max), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, kInt32Min), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, 0, kInt32Max), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, 0, kInt32Min), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(kInt64Max, kInt32Max, kInt32Max), "timeout"),
                  "22023");
}

// A day part past the 64-bit range that the time part brings back into it
// is a length like any other (the sum is exact, not done in 64 bits).
TEST(Duration, DayPartPastTheRangeBroughtBackByTime) {
  // -106751992 days is -9223372108800000000 us, below INT64_MIN.
  EXPECT_EQ(duration(iv(kInt64Max, -106'751'992), "ttl"), -71'945'224'193);
  EXPECT_EQ(duration(iv(kInt64Min, 106'751'992), "ttl"), 71'945'224'192);
  EXPECT_EQ(saturated_duration(iv(kInt64Max, -106'751'992)), -71'945'224'193);
}

TEST(SaturatedSum, ExactWhereItFitsClampedWhereNot) {
  EXPECT_EQ(saturated_sum(100, 50), 150);
  EXPECT_EQ(saturated_sum(100, -150), -50);
  EXPECT_EQ(saturated_sum(kInt64Max - 1, 1), kInt64Max);
  EXPECT_EQ(saturated_sum(kInt64Max, 1), kInt64Max);
  EXPECT_EQ(saturated_sum(1, kInt64Max), kInt64Max);
  EXPECT_EQ(saturated_sum(kInt64Min, -1), kInt64Min);
  EXPECT_EQ(saturated_sum(kInt64Max, kInt64Min), -1);
}

TEST(Duration, OverflowMessageNamesTheArgument) {
  try {
    duration(iv(0, 0, kInt32Max), "timeout");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.sqlstate()), "22023");
    EXPECT_NE(std::string(e.what()).find("timeout"), std::string::npos);
  }
}

TEST(DescribeDuration, WholeAndFractionalMilliseconds) {
  EXPECT_EQ(describe_duration(0), "0 ms");
  EXPECT_EQ(describe_duration(86'400'000'000), "86400000 ms");
  EXPECT_EQ(describe_duration(86'400'000'001), "86400000.001 ms");
  EXPECT_EQ(describe_duration(1'500), "1.5 ms");
  EXPECT_EQ(describe_duration(250), "0.25 ms");
  EXPECT_EQ(describe_duration(-1'000), "-1 ms");
  EXPECT_EQ(describe_duration(-250), "-0.25 ms");
}

TEST(SaturatedDuration, ExactWhereItFitsClampedWhereNot) {
  EXPECT_EQ(saturated_duration(iv(3 * kHour + 4, 2, 1)),
            32 * kMicrosPerDay + 3 * kHour + 4);
  EXPECT_EQ(saturated_duration(iv(-1)), -1);
  EXPECT_EQ(saturated_duration(iv(kInt64Max, 1)), kInt64Max);
  EXPECT_EQ(saturated_duration(iv(0, kInt32Max, kInt32Max)), kInt64Max);
  EXPECT_EQ(saturated_duration(iv(kInt64Min, -1)), kInt64Min);
  EXPECT_EQ(saturated_duration(iv(0, kInt32Min, kInt32Min)), kInt64Min);
}

}  // namespace
}  // namespace dlock
