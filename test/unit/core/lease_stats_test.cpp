// Unit tests of src/core/lease_stats: what each event adds to a name's
// counters, totals, and how many names give way when the table is full.
#include "lease_stats.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace dlock {
namespace {

TEST(LeaseStats, EachEventCountsWhatItSays) {
  LeaseCounters c;
  record(c, LeaseEvent::grant);
  record(c, LeaseEvent::busy);
  record(c, LeaseEvent::busy);
  record(c, LeaseEvent::wait_started);
  record(c, LeaseEvent::wait_granted, 1'500);
  record(c, LeaseEvent::wait_started);
  record(c, LeaseEvent::wait_timed_out, 4'000);
  record(c, LeaseEvent::takeover, 30'000'000);
  record(c, LeaseEvent::release, 2'000);
  record(c, LeaseEvent::force_release, 7'000);
  record(c, LeaseEvent::renew_failure);
  EXPECT_EQ(c.grants, 1);
  EXPECT_EQ(c.busy, 2);
  EXPECT_EQ(c.waits, 2);
  EXPECT_EQ(c.wait_timeouts, 1);
  EXPECT_EQ(c.total_wait, 5'500);
  EXPECT_EQ(c.max_wait, 4'000);
  EXPECT_EQ(c.takeovers, 1);
  EXPECT_EQ(c.releases, 1);
  EXPECT_EQ(c.force_releases, 1);
  EXPECT_EQ(c.renew_failures, 1);
  EXPECT_EQ(c.total_hold, 30'009'000);
  EXPECT_EQ(c.max_hold, 30'000'000);
  EXPECT_EQ(c.usage, 11);
}

TEST(LeaseStats, ATakeoverIsNoGrantOfItsOwn) {
  // The grant that took over counts as a grant; the takeover counts the
  // grant it ended.
  LeaseCounters c;
  record(c, LeaseEvent::grant);
  record(c, LeaseEvent::takeover, 1'000);
  EXPECT_EQ(c.grants, 1);
  EXPECT_EQ(c.takeovers, 1);
  EXPECT_EQ(c.releases, 0);
}

TEST(LeaseStats, AGrantIsHeldUntilItEndsOrExpires) {
  // Released or force-released in time: until then.
  EXPECT_EQ(hold_time(1'000, 31'000, 21'000), 20'000);
  // Taken over, or force-released after it expired: until its expiry.
  EXPECT_EQ(hold_time(1'000, 31'000, 90'000), 30'000);
  EXPECT_EQ(hold_time(1'000, 31'000, 31'000), 30'000);
}

TEST(LeaseStats, ATimeBelowZeroCountsAsZero) {
  // The wall clock stepped back between grant and release.
  LeaseCounters c;
  record(c, LeaseEvent::release, -5'000);
  EXPECT_EQ(c.releases, 1);
  EXPECT_EQ(c.total_hold, 0);
  EXPECT_EQ(c.max_hold, 0);
}

TEST(LeaseStats, TimesSaturate) {
  LeaseCounters c;
  record(c, LeaseEvent::release, INT64_MAX - 10);
  record(c, LeaseEvent::release, 100);
  EXPECT_EQ(c.total_hold, INT64_MAX);
  EXPECT_EQ(c.max_hold, INT64_MAX - 10);
}

TEST(LeaseStats, MergeSumsAndKeepsTheLargerMaximum) {
  LeaseCounters a, b;
  record(a, LeaseEvent::grant);
  record(a, LeaseEvent::release, 3'000);
  record(b, LeaseEvent::grant);
  record(b, LeaseEvent::grant);
  record(b, LeaseEvent::release, 9'000);
  record(b, LeaseEvent::wait_started);
  record(b, LeaseEvent::wait_timed_out, 50);
  merge(a, b);
  EXPECT_EQ(a.grants, 3);
  EXPECT_EQ(a.releases, 2);
  EXPECT_EQ(a.total_hold, 12'000);
  EXPECT_EQ(a.max_hold, 9'000);
  EXPECT_EQ(a.waits, 1);
  EXPECT_EQ(a.wait_timeouts, 1);
  EXPECT_EQ(a.total_wait, 50);
  EXPECT_EQ(a.max_wait, 50);
  EXPECT_EQ(a.usage, 7);
}

TEST(LeaseStats, AFullTableEvictsOneNameInTwenty) {
  EXPECT_EQ(names_to_evict(1), 1u);
  EXPECT_EQ(names_to_evict(39), 1u);
  EXPECT_EQ(names_to_evict(100), 5u);
  EXPECT_EQ(names_to_evict(5'000), 250u);
}

}  // namespace
}  // namespace dlock
