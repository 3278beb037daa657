// The keeper's deadline arithmetic, on made-up time points.
#include <dlock/local_deadline.h>

#include <gtest/gtest.h>

namespace dlock::client {
namespace {

using std::chrono::milliseconds;

const TimePoint kStart = TimePoint(std::chrono::hours(1));

TEST(SafetyMargin, IsTheFixedPartPlusOnePercent) {
  DeadlinePolicy p;
  EXPECT_EQ(safety_margin(milliseconds(30000), p), milliseconds(250 + 300));
  EXPECT_EQ(safety_margin(milliseconds(0), p), milliseconds(250));
  p.fixed_margin = milliseconds(5250);
  EXPECT_EQ(safety_margin(milliseconds(10000), p), milliseconds(5350));
}

TEST(LocalDeadline, CountsFromWhenTheCallWasSent) {
  LocalDeadline d(kStart, milliseconds(30000), DeadlinePolicy{});
  // 30 s - (250 ms + 300 ms)
  EXPECT_EQ(d.deadline(), kStart + milliseconds(29450));
  EXPECT_EQ(d.next_renewal(), kStart + milliseconds(10000));
  EXPECT_FALSE(d.passed(kStart + milliseconds(29449)));
  EXPECT_TRUE(d.passed(kStart + milliseconds(29450)));
}

TEST(LocalDeadline, ARenewalMovesItFromItsOwnSendTime) {
  LocalDeadline d(kStart, milliseconds(30000), DeadlinePolicy{});
  // Sent at 10 s, answered 29.9 s of validity (the answer was slow).
  d.renewed(kStart + milliseconds(10000), milliseconds(29900));
  EXPECT_EQ(d.deadline(), kStart + milliseconds(10000 + 29900 - 250 - 299));
  EXPECT_EQ(d.next_renewal(), kStart + milliseconds(10000 + 9966));
}

TEST(LocalDeadline, ALateAnswerToAnOlderRenewalNeverMovesItBack) {
  LocalDeadline d(kStart, milliseconds(30000), DeadlinePolicy{});
  d.renewed(kStart + milliseconds(20000), milliseconds(30000));
  TimePoint after_newer = d.deadline();
  d.renewed(kStart + milliseconds(10000), milliseconds(30000));
  EXPECT_EQ(d.deadline(), after_newer);
}

TEST(LocalDeadline, AShorterValidityFromMaxHoldBringsItCloser) {
  LocalDeadline d(kStart, milliseconds(30000), DeadlinePolicy{});
  // max_hold caps the renewal: 12 s left, the deadline must not pass
  // sent + 12 s - margin even though it moves forward from the grant's.
  d.renewed(kStart + milliseconds(20000), milliseconds(12000));
  EXPECT_EQ(d.deadline(), kStart + milliseconds(20000 + 12000 - 250 - 120));
  EXPECT_EQ(d.next_renewal(), kStart + milliseconds(24000));
}

TEST(LocalDeadline, AValidityShorterThanTheMarginIsAlreadyPast) {
  LocalDeadline d(kStart, milliseconds(200), DeadlinePolicy{});
  EXPECT_TRUE(d.passed(kStart));
  EXPECT_EQ(d.next_renewal(), d.deadline());
}

TEST(LocalDeadline, RenewalNeverScheduledPastTheDeadline) {
  DeadlinePolicy p;
  p.renew_fraction = 0.99;
  LocalDeadline d(kStart, milliseconds(10000), p);
  EXPECT_EQ(d.deadline(), kStart + milliseconds(10000 - 250 - 100));
  EXPECT_EQ(d.next_renewal(), d.deadline());
}

TEST(LocalDeadline, RetriesBackOffAndStopAtTheDeadline) {
  LocalDeadline d(kStart, milliseconds(30000), DeadlinePolicy{});
  EXPECT_EQ(d.retry_at(kStart, 1), kStart + milliseconds(100));
  EXPECT_EQ(d.retry_at(kStart, 2), kStart + milliseconds(200));
  EXPECT_EQ(d.retry_at(kStart, 5), kStart + milliseconds(1600));
  EXPECT_EQ(d.retry_at(kStart, 6), kStart + milliseconds(2000));
  EXPECT_EQ(d.retry_at(kStart, 60), kStart + milliseconds(2000));
  TimePoint late = d.deadline() - milliseconds(30);
  EXPECT_EQ(d.retry_at(late, 3), d.deadline());
}

TEST(BootClock, NeverGoesBack) {
  TimePoint a = BootClock::now();
  TimePoint b = BootClock::now();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace dlock::client
