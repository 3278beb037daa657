// Unit tests of src/core/deadline: a wait's end on the monotonic clock and
// how long the head of a queue sleeps.
#include "deadline.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>

namespace dlock {
namespace {

TEST(Deadline, AfterAddsTheTimeout) {
  Deadline d = Deadline::after(1'000, 2'500);
  EXPECT_EQ(d.at(), 3'500);
  EXPECT_EQ(d.left(1'000), 2'500);
  EXPECT_EQ(d.left(3'499), 1);
  EXPECT_EQ(d.left(3'500), 0);
  EXPECT_EQ(d.left(9'000), 0);
}

// The longest timeout an interval holds never wraps into "already passed".
TEST(Deadline, SaturatesInsteadOfOverflowing) {
  Deadline d = Deadline::after(monotonic_now(), INT64_MAX);
  EXPECT_EQ(d.at(), INT64_MAX);
  EXPECT_GT(d.left(monotonic_now()), INT64_MAX / 2);
  EXPECT_EQ(Deadline::never().left(INT64_MAX - 1), 1);
}

TEST(Deadline, ZeroTimeoutHasPassedAtOnce) {
  EXPECT_EQ(Deadline::after(5, 0).left(5), 0);
}

TEST(MonotonicNow, NeverGoesBack) {
  Micros last = monotonic_now();
  for (int i = 0; i < 1000; ++i) {
    Micros now = monotonic_now();
    EXPECT_GE(now, last);
    last = now;
  }
}

// Until the holder's grant frees the lease or the deadline, whichever is
// first, rounded up to whole milliseconds.
TEST(SleepMs, UntilTheEarlierOfFreeAndDeadline) {
  EXPECT_EQ(sleep_ms(2'000, 10'000), 2);
  EXPECT_EQ(sleep_ms(20'000, 10'000), 10);
  EXPECT_EQ(sleep_ms(1, 10'000), 1);  // never 0 before the moment
  EXPECT_EQ(sleep_ms(1'001, 10'000), 2);
  EXPECT_EQ(sleep_ms(0, 7'000), 7);       // free time unknown
  EXPECT_EQ(sleep_ms(-5'000, 7'000), 7);  // already free: deadline bounds
  EXPECT_EQ(sleep_ms(0, 0), 0);
}

// Waiting for a grant to end, the head looks at the wall clock again every
// second: a step forward may have ended the grant.
TEST(SleepMs, AtMostASecondUntilFree) {
  EXPECT_EQ(sleep_ms(3'600'000'000, 60'000'000), 1'000);
  EXPECT_EQ(sleep_ms(1'000'001, 60'000'000), 1'000);
  EXPECT_EQ(sleep_ms(999'000, 60'000'000), 999);
  EXPECT_EQ(sleep_ms(3'600'000'000, 500'000), 500);  // the deadline first
  EXPECT_EQ(sleep_ms(INT64_MAX, INT64_MAX), 1'000);
}

// A sleep longer than a C int of milliseconds is cut; the head sleeps again.
TEST(SleepMs, AtMostTheLongestSleep) {
  EXPECT_EQ(sleep_ms(0, INT64_MAX), INT32_MAX);
  EXPECT_LE(static_cast<Micros>(sleep_ms(0, kLongestSleep + 5)) * 1000,
            kLongestSleep);
}

}  // namespace
}  // namespace dlock
