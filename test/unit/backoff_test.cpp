// Unit tests of src/core/backoff: the sleep schedule of dlock.acquire().
#include "backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace dlock {
namespace {

constexpr Micros kNoHolder = 0;                    // holder's expiry unknown
constexpr Micros kFarDeadline = 3'600'000'000;     // an hour: never binds

// The ceiling of the i-th sleep (0-based) with the default schedule.
constexpr Micros kDefaultCeilings[] = {2'000,  4'000,  8'000,  16'000,
                                       32'000, 64'000, 100'000, 100'000,
                                       100'000};

std::vector<Micros> draws(std::uint64_t seed, int n,
                          Micros holder_left = kNoHolder,
                          Micros deadline_left = kFarDeadline) {
  Backoff b(seed);
  std::vector<Micros> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(b.next_sleep(holder_left, deadline_left));
  }
  return out;
}

TEST(Backoff, SameSeedSameSchedule) {
  EXPECT_EQ(draws(42, 50), draws(42, 50));
  EXPECT_EQ(draws(0, 50, 30'000, 250'000), draws(0, 50, 30'000, 250'000));
}

TEST(Backoff, DifferentSeedsDiffer) {
  EXPECT_NE(draws(1, 50), draws(2, 50));
}

TEST(Backoff, JitterStaysWithinHalfCeilingToCeiling) {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    Backoff b(seed);
    for (Micros ceiling : kDefaultCeilings) {
      Micros s = b.next_sleep(kNoHolder, kFarDeadline);
      EXPECT_GE(s, ceiling / 2) << "seed " << seed << " ceiling " << ceiling;
      EXPECT_LE(s, ceiling) << "seed " << seed << " ceiling " << ceiling;
    }
  }
}

TEST(Backoff, GrowsThenStaysAtMost100ms) {
  // Over many seeds, the largest sleep seen at each step follows the
  // doubling ceiling and then stays at the cap.
  const int steps = 40;
  std::vector<Micros> lo(steps, kFarDeadline), hi(steps, 0);
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    Backoff b(seed);
    for (int i = 0; i < steps; ++i) {
      Micros s = b.next_sleep(kNoHolder, kFarDeadline);
      lo[i] = std::min(lo[i], s);
      hi[i] = std::max(hi[i], s);
    }
  }
  for (int i = 0; i < steps; ++i) {
    EXPECT_LE(hi[i], Backoff::kMax) << "step " << i;
  }
  // First step in [1 ms, 2 ms]; from step 6 on in [50 ms, 100 ms].
  EXPECT_GE(lo[0], 1'000);
  EXPECT_LE(hi[0], 2'000);
  for (int i = 6; i < steps; ++i) {
    EXPECT_GE(lo[i], 50'000) << "step " << i;
  }
  // The schedule does grow: step i stays within [ceiling_i / 2, ceiling_i],
  // and the largest sleep seen rises from step to step.
  for (int i = 1; i < 6; ++i) {
    EXPECT_GE(lo[i], kDefaultCeilings[i] / 2) << "step " << i;
    EXPECT_GT(hi[i], hi[i - 1]) << "step " << i;
  }
}

TEST(Backoff, CustomFirstAndMax) {
  Backoff b(7, 10'000, 30'000);
  const Micros ceilings[] = {10'000, 20'000, 30'000, 30'000, 30'000};
  for (Micros ceiling : ceilings) {
    Micros s = b.next_sleep(kNoHolder, kFarDeadline);
    EXPECT_GE(s, ceiling / 2);
    EXPECT_LE(s, ceiling);
  }
}

TEST(Backoff, NeverTighterThanMinimum) {
  // first and max below kMin are raised to it: every sleep is exactly 0.5 ms.
  Backoff b(3, 1, 1);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(b.next_sleep(kNoHolder, kFarDeadline), Backoff::kMin);
  }
  // first below kMin: the first ceiling is kMin, and the jitter floor
  // [250, 500] is raised to 500.
  Backoff c(3, 100, 100'000);
  EXPECT_EQ(c.next_sleep(kNoHolder, kFarDeadline), Backoff::kMin);
  Micros second = c.next_sleep(kNoHolder, kFarDeadline);
  EXPECT_GE(second, 500);
  EXPECT_LE(second, 1'000);
}

TEST(Backoff, WakesJustAfterHolderExpiry) {
  // The first jitter is at least 1 ms, so a holder with less than 0.5 ms
  // left caps the sleep at exactly holder_left + kMin.
  EXPECT_EQ(Backoff(9).next_sleep(1, kFarDeadline), 501);
  EXPECT_EQ(Backoff(9).next_sleep(100, kFarDeadline), 600);
  EXPECT_EQ(Backoff(9).next_sleep(499, kFarDeadline), 999);
  // Later in the schedule (ceiling 100 ms) the cap binds for longer holders.
  Backoff b(9);
  for (int i = 0; i < 10; ++i) b.next_sleep(kNoHolder, kFarDeadline);
  EXPECT_EQ(b.next_sleep(20'000, kFarDeadline), 20'500);
  EXPECT_EQ(b.next_sleep(49'499, kFarDeadline), 49'999);
}

TEST(Backoff, HolderFarAwayDoesNotShortenSleep) {
  std::vector<Micros> free_run = draws(11, 12);
  std::vector<Micros> far_holder = draws(11, 12, 10'000'000);
  EXPECT_EQ(free_run, far_holder);
}

TEST(Backoff, UnknownHolderIsNotACap) {
  // holder_left <= 0 means unknown: the schedule is the free-running one.
  EXPECT_EQ(draws(5, 12, 0), draws(5, 12));
  EXPECT_EQ(draws(5, 12, -1'000), draws(5, 12));
}

TEST(Backoff, NeverPastTheDeadline) {
  EXPECT_EQ(Backoff(4).next_sleep(kNoHolder, 1), 1);
  EXPECT_EQ(Backoff(4).next_sleep(kNoHolder, 700), 700);
  // The deadline binds before the holder's expiry.
  EXPECT_EQ(Backoff(4).next_sleep(100, 300), 300);
  // The holder's expiry binds before the deadline.
  EXPECT_EQ(Backoff(4).next_sleep(100, 601), 600);
  EXPECT_EQ(Backoff(4).next_sleep(100, 600), 600);
  EXPECT_EQ(Backoff(4).next_sleep(100, 599), 599);
}

TEST(Backoff, AtLeastOneMicrosecond) {
  // deadline_left must be > 0; even if it is not, the sleep is 1 µs.
  EXPECT_EQ(Backoff(4).next_sleep(kNoHolder, 0), 1);
  EXPECT_EQ(Backoff(4).next_sleep(kNoHolder, -5), 1);
}

TEST(Backoff, RandomisedInvariants) {
  std::mt19937_64 gen(20240601);
  std::uniform_int_distribution<Micros> holder(-50'000, 300'000);
  std::uniform_int_distribution<Micros> deadline(1, 2'000'000);
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    Backoff b(seed);
    for (int i = 0; i < 30; ++i) {
      const Micros ceiling = i < 9 ? kDefaultCeilings[i] : Backoff::kMax;
      Micros h = holder(gen);
      Micros d = deadline(gen);
      Micros s = b.next_sleep(h, d);
      ASSERT_GE(s, 1);
      ASSERT_LE(s, d);
      ASSERT_LE(s, ceiling);
      if (h > 0) {
        ASSERT_LE(s, h + Backoff::kMin);
      }
      // Only a cap can push a sleep below half its ceiling.
      Micros floor = ceiling / 2;
      if (h > 0) floor = std::min(floor, h + Backoff::kMin);
      floor = std::min(floor, d);
      ASSERT_GE(s, floor) << "seed " << seed << " step " << i;
    }
  }
}

}  // namespace
}  // namespace dlock
