// Unit tests of src/core/sweep: how many names one dlock.sweep call takes,
// from the size of the server's lock table.
#include "sweep.h"

#include <gtest/gtest.h>

#include <climits>

namespace dlock {
namespace {

TEST(SweepBatch, ATenthOfTheLockTable) {
  // PostgreSQL's defaults: 64 × (100 + 0) entries.
  EXPECT_EQ(sweep_batch(64, 100, 0), 640);
  // A small server: 64 × 20.
  EXPECT_EQ(sweep_batch(64, 20, 0), 128);
  // Prepared transactions count: each keeps its locks.
  EXPECT_EQ(sweep_batch(64, 20, 10), 192);
  EXPECT_EQ(sweep_batch(10, 1, 0), 1);
}

TEST(SweepBatch, AtLeastOneAtMostTenThousand) {
  EXPECT_EQ(sweep_batch(10, 0, 0), 1);
  EXPECT_EQ(sweep_batch(0, 100, 0), 1);
  EXPECT_EQ(sweep_batch(1000, 1000, 0), kMaxSweepBatch);
  EXPECT_EQ(sweep_batch(INT_MAX, INT_MAX, INT_MAX), kMaxSweepBatch);
  EXPECT_EQ(kMaxSweepBatch, 10000);
}

}  // namespace
}  // namespace dlock
