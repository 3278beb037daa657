// Unit tests of src/core/holders: how the holders of a shared lease or a
// semaphore combine into a grant decision, and when a waiter could next
// be served.
#include "holders.h"

#include <gtest/gtest.h>

#include <vector>

#include "test_support.h"

namespace dlock {
namespace {

using namespace dlock::testing;

constexpr Micros kNow = 1'700'000'000'000'000;  // an arbitrary server clock
constexpr Micros kSecond = kMicrosPerSecond;

const HolderRequest kExclusive{HolderMode::exclusive, 1};
const HolderRequest kShared{HolderMode::shared, 1};
HolderRequest permits(int n) { return HolderRequest{HolderMode::exclusive, n}; }

Holder holder(HolderMode mode, Micros expires_at, bool same_owner = false) {
  Holder h;
  h.mode = mode;
  h.row.token = 1;
  h.row.expires_at = expires_at;
  h.row.same_owner = same_owner;
  return h;
}
Holder reader(Micros expires_at) {
  return holder(HolderMode::shared, expires_at);
}
Holder writer(Micros expires_at) {
  return holder(HolderMode::exclusive, expires_at);
}
Holder released(Holder h) {
  h.row.released = true;
  return h;
}

HolderGrant decide(const std::vector<Holder>& holders, const HolderRequest& r,
                   bool writer_waits = false, int in_force = 1) {
  return decide_holder_grant(holders, in_force, r, writer_waits, kNow);
}

TEST(DecideHolderGrant, NoHoldersGrantsAnyRequest) {
  EXPECT_EQ(decide({}, kExclusive), HolderGrant::new_holder);
  EXPECT_EQ(decide({}, kShared), HolderGrant::new_holder);
  EXPECT_EQ(decide({}, permits(3), false, 1), HolderGrant::new_holder);
}

TEST(DecideHolderGrant, ReadersShareAndKeepWritersOut) {
  std::vector<Holder> readers{reader(kNow + kSecond),
                              reader(kNow + 2 * kSecond)};
  EXPECT_EQ(decide(readers, kShared), HolderGrant::new_holder);
  EXPECT_EQ(decide(readers, kExclusive), HolderGrant::busy);
}

TEST(DecideHolderGrant, AWriterKeepsEveryoneOut) {
  std::vector<Holder> w{writer(kNow + kSecond)};
  EXPECT_EQ(decide(w, kShared), HolderGrant::busy);
  EXPECT_EQ(decide(w, kExclusive), HolderGrant::busy);
}

TEST(DecideHolderGrant, AWaitingWriterHoldsNewReadersBack) {
  std::vector<Holder> readers{reader(kNow + kSecond)};
  EXPECT_EQ(decide(readers, kShared, true), HolderGrant::busy);
  EXPECT_EQ(decide({}, kShared, true), HolderGrant::busy);
  // It does not hold back another writer (the queue orders writers).
  EXPECT_EQ(decide({}, kExclusive, true), HolderGrant::new_holder);
}

TEST(DecideHolderGrant, GoneHoldersDoNotCount) {
  std::vector<Holder> gone{writer(kNow), released(writer(kNow + kSecond)),
                           reader(kNow - kSecond)};
  EXPECT_EQ(decide(gone, kExclusive), HolderGrant::new_holder);
  EXPECT_EQ(decide(gone, kShared), HolderGrant::new_holder);
}

TEST(DecideHolderGrant, LockDelayAndMinHoldStillOccupy) {
  Holder delayed = writer(kNow - kSecond);
  delayed.row.lock_delay = 2 * kSecond;
  EXPECT_EQ(decide({delayed}, kShared), HolderGrant::busy);
  Holder early = released(reader(kNow + kSecond));
  early.row.min_hold_until = kNow + kSecond;
  EXPECT_EQ(decide({early}, kExclusive), HolderGrant::busy);
  EXPECT_EQ(decide({early}, kShared), HolderGrant::new_holder);
}

TEST(DecideHolderGrant, TheSameOwnerRetriesOrIsRefusedTheOtherMode) {
  std::vector<Holder> mine{holder(HolderMode::shared, kNow + kSecond, true),
                           reader(kNow + kSecond)};
  EXPECT_EQ(decide(mine, kShared), HolderGrant::same_token);
  EXPECT_EQ(decide(mine, kExclusive), HolderGrant::other_mode);
  // A waiting writer does not stop the owner's retry.
  EXPECT_EQ(decide(mine, kShared, true), HolderGrant::same_token);
  // Past its expiry the owner's grant is no longer its own to extend.
  Holder delayed = holder(HolderMode::exclusive, kNow - kSecond, true);
  delayed.row.lock_delay = 2 * kSecond;
  EXPECT_EQ(decide({delayed}, kExclusive), HolderGrant::busy);
}

TEST(DecideHolderGrant, ASemaphoreGrantsUpToItsPermits) {
  std::vector<Holder> two{writer(kNow + kSecond), writer(kNow + kSecond)};
  EXPECT_EQ(decide(two, permits(3), false, 3), HolderGrant::new_holder);
  two.push_back(writer(kNow + kSecond));
  EXPECT_EQ(decide(two, permits(3), false, 3), HolderGrant::busy);
  two[0] = released(two[0]);
  EXPECT_EQ(decide(two, permits(3), false, 3), HolderGrant::new_holder);
}

TEST(DecideHolderGrant, APermitCountHoldsWhileAnyoneOccupies) {
  std::vector<Holder> one{writer(kNow + kSecond)};
  EXPECT_EQ(decide(one, permits(2), false, 3), HolderGrant::permits_differ);
  EXPECT_EQ(decide(one, kExclusive, false, 3), HolderGrant::permits_differ);
  // With nobody left, the next grant sets the count.
  std::vector<Holder> gone{writer(kNow - kSecond)};
  EXPECT_EQ(decide(gone, permits(2), false, 3), HolderGrant::new_holder);
}

TEST(HoldersFreeAt, NowWhenItCouldBeGranted) {
  EXPECT_EQ(holders_free_at({}, 1, kExclusive, false, kNow), kNow);
}

TEST(HoldersFreeAt, AWriterWaitsForTheLastOccupant) {
  std::vector<Holder> readers{reader(kNow + 2 * kSecond),
                              reader(kNow + kSecond)};
  EXPECT_EQ(holders_free_at(readers, 1, kExclusive, false, kNow),
            kNow + 2 * kSecond);
}

TEST(HoldersFreeAt, AReaderWaitsOnlyForWriters) {
  Holder delayed = writer(kNow + kSecond);
  delayed.row.lock_delay = kSecond;
  EXPECT_EQ(holders_free_at({delayed}, 1, kShared, false, kNow),
            kNow + 2 * kSecond);
  EXPECT_EQ(holders_free_at({reader(kNow + kSecond)}, 1, kShared, true, kNow),
            kInt64Max);
}

TEST(HoldersFreeAt, ASemaphoreWaitsForTheFirstPermitToFree) {
  std::vector<Holder> full{writer(kNow + 3 * kSecond), writer(kNow + kSecond),
                           writer(kNow + 2 * kSecond)};
  EXPECT_EQ(holders_free_at(full, 3, permits(3), false, kNow), kNow + kSecond);
  EXPECT_EQ(holders_free_at(full, 3, permits(2), false, kNow), kInt64Max);
}

}  // namespace
}  // namespace dlock
