// Unit tests of src/core/lease_stats: what each event adds to a name's
// counters, totals, and how many names give way when the table is full.
#include "lease_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
  record(c, LeaseEvent::lapse);
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
  EXPECT_EQ(c.lapses, 1);
  EXPECT_EQ(c.usage, 12);
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
  record(b, LeaseEvent::lapse);
  merge(a, b);
  EXPECT_EQ(a.grants, 3);
  EXPECT_EQ(a.releases, 2);
  EXPECT_EQ(a.total_hold, 12'000);
  EXPECT_EQ(a.max_hold, 9'000);
  EXPECT_EQ(a.waits, 1);
  EXPECT_EQ(a.wait_timeouts, 1);
  EXPECT_EQ(a.total_wait, 50);
  EXPECT_EQ(a.max_wait, 50);
  EXPECT_EQ(a.lapses, 1);
  EXPECT_EQ(a.usage, 8);
}

TEST(LeaseStats, AFullTableEvictsOneNameInTwenty) {
  EXPECT_EQ(names_to_evict(1), 1u);
  EXPECT_EQ(names_to_evict(39), 1u);
  EXPECT_EQ(names_to_evict(100), 5u);
  EXPECT_EQ(names_to_evict(5'000), 250u);
}

TEST(LeaseStats, ALapseIsNeitherATakeoverNorARelease) {
  LeaseCounters c;
  record(c, LeaseEvent::lapse);
  EXPECT_EQ(c.lapses, 1);
  EXPECT_EQ(c.takeovers, 0);
  EXPECT_EQ(c.releases, 0);
  EXPECT_EQ(c.total_hold, 0);
}

TEST(LeaseStats, ARowsEventsWaitForTheCommit) {
  EXPECT_EQ(when_counted(LeaseEvent::grant), Counted::at_commit);
  EXPECT_EQ(when_counted(LeaseEvent::takeover), Counted::at_commit);
  EXPECT_EQ(when_counted(LeaseEvent::release), Counted::at_commit);
  EXPECT_EQ(when_counted(LeaseEvent::force_release), Counted::at_commit);
  EXPECT_EQ(when_counted(LeaseEvent::lapse), Counted::at_commit);
  EXPECT_EQ(when_counted(LeaseEvent::busy), Counted::now);
  EXPECT_EQ(when_counted(LeaseEvent::wait_started), Counted::now);
  EXPECT_EQ(when_counted(LeaseEvent::wait_granted), Counted::now);
  EXPECT_EQ(when_counted(LeaseEvent::wait_timed_out), Counted::now);
  // At once, but a name without a lease row is not added: anyone can
  // renew a made-up name.
  EXPECT_EQ(when_counted(LeaseEvent::renew_failure), Counted::now_if_real);
}

TEST(LeaseStats, TheMedianIsTheUsageHalfWayUp) {
  EXPECT_EQ(median_usage(nullptr, 0), 0);
  double one[] = {4};
  EXPECT_EQ(median_usage(one, 1), 4);
  double odd[] = {9, 1, 5, 7, 3};
  EXPECT_EQ(median_usage(odd, 5), 5);
  // An even count: the upper of the two middle ones (index n / 2).
  double even[] = {8, 2, 6, 4};
  EXPECT_EQ(median_usage(even, 4), 6);
}

TEST(LeaseStats, ANewNameStartsAtTheMedian) {
  LeaseCounters c;
  record_first(c, LeaseEvent::grant, 0, 7.5);
  EXPECT_EQ(c.grants, 1);
  EXPECT_EQ(c.usage, 7.5);
  // Before any eviction there is no median: one event, one use.
  LeaseCounters d;
  record_first(d, LeaseEvent::release, 2'000, 0);
  EXPECT_EQ(d.releases, 1);
  EXPECT_EQ(d.total_hold, 2'000);
  EXPECT_EQ(d.usage, 1);
  // Its later events add one each, as for any name.
  record(c, LeaseEvent::release, 1'000);
  EXPECT_EQ(c.usage, 8.5);
}

// The table as src/pg/stats.cpp keeps it: a name new to a full table
// first ages every usage and evicts the least used, and the median of
// those left is where the next new names start.
struct Table {
  std::vector<std::pair<std::string, double>> names;
  double median = 0;
  std::size_t evicted = 0;

  void add(const std::string& name, std::size_t max) {
    if (names.size() + 1 >= max) {  // the database's own entry is one
      for (auto& n : names) n.second *= kUsageDecay;
      std::size_t gone = std::min(names_to_evict(max), names.size());
      std::partial_sort(
          names.begin(), names.begin() + gone, names.end(),
          [](const auto& a, const auto& b) { return a.second < b.second; });
      names.erase(names.begin(), names.begin() + gone);
      evicted += gone;
      std::vector<double> usages;
      for (auto& n : names) usages.push_back(n.second);
      median = median_usage(usages.data(), usages.size());
    }
    LeaseCounters c;
    record_first(c, LeaseEvent::grant, 0, median);
    names.emplace_back(name, c.usage);
  }
  bool has(const std::string& name) const {
    return std::any_of(names.begin(), names.end(),
                       [&](const auto& n) { return n.first == name; });
  }
};

TEST(LeaseStats, ABurstOfNewNamesLeavesTheNamesUsedMore) {
  // 20 names used 10 times each, then 4,000 names used once, in a table
  // of 100 entries: the burst evicts its own names, however long it is.
  // Had new names started at one use, the aging of 785 evictions
  // (0.99^785 < 0.001) would have put the 20 below them.
  Table t;
  for (int i = 0; i < 20; ++i)
    t.names.emplace_back("hot-" + std::to_string(i), 10);
  for (int i = 0; i < 4'000; ++i) t.add("burst-" + std::to_string(i), 100);
  for (int i = 0; i < 20; ++i)
    EXPECT_TRUE(t.has("hot-" + std::to_string(i))) << i;
  EXPECT_EQ(t.evicted, 3'925u);
  EXPECT_EQ(t.names.size(), 95u);
}

}  // namespace
}  // namespace dlock
