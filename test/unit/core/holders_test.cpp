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

Holder holder(HolderMode mode, Micros expires_at, bool same_owner = false,
              int permits = 1) {
  Holder h;
  h.mode = mode;
  h.permits = permits;
  h.grant.token = 1;
  h.grant.expires_at = expires_at;
  h.grant.same_owner = same_owner;
  return h;
}
Holder reader(Micros expires_at) {
  return holder(HolderMode::shared, expires_at);
}
Holder writer(Micros expires_at) {
  return holder(HolderMode::exclusive, expires_at);
}
Holder permit(int of, Micros expires_at) {
  return holder(HolderMode::exclusive, expires_at, false, of);
}
Holder released(Holder h) {
  h.grant.released = true;
  return h;
}

HolderGrant decide(const std::vector<Holder>& holders, const HolderRequest& r) {
  return decide_holder_grant(holders.data(), holders.size(), r, kNow);
}
Micros free_at(const std::vector<Holder>& holders, const HolderRequest& r) {
  return holders_free_at(holders.data(), holders.size(), r, kNow);
}

TEST(DecideHolderGrant, NoHoldersGrantsAnyRequest) {
  EXPECT_EQ(decide({}, kExclusive), HolderGrant::new_holder);
  EXPECT_EQ(decide({}, kShared), HolderGrant::new_holder);
  EXPECT_EQ(decide({}, permits(3)), HolderGrant::new_holder);
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

TEST(DecideHolderGrant, GoneHoldersDoNotCount) {
  std::vector<Holder> gone{writer(kNow), released(writer(kNow + kSecond)),
                           reader(kNow - kSecond)};
  EXPECT_EQ(decide(gone, kExclusive), HolderGrant::new_holder);
  EXPECT_EQ(decide(gone, kShared), HolderGrant::new_holder);
  EXPECT_EQ(decide(gone, permits(4)), HolderGrant::new_holder);
}

TEST(DecideHolderGrant, LockDelayAndMinHoldStillOccupy) {
  Holder delayed = writer(kNow - kSecond);
  delayed.grant.lock_delay = 2 * kSecond;
  EXPECT_EQ(decide({delayed}, kShared), HolderGrant::busy);
  Holder early = released(reader(kNow + kSecond));
  early.grant.min_hold_until = kNow + kSecond;
  EXPECT_EQ(decide({early}, kExclusive), HolderGrant::busy);
  EXPECT_EQ(decide({early}, kShared), HolderGrant::new_holder);
}

TEST(DecideHolderGrant, TheSameOwnerRetriesOrIsRefusedTheOtherMode) {
  std::vector<Holder> mine{holder(HolderMode::shared, kNow + kSecond, true),
                           reader(kNow + kSecond)};
  EXPECT_EQ(decide(mine, kShared), HolderGrant::same_token);
  EXPECT_EQ(decide(mine, kExclusive), HolderGrant::other_mode);
  EXPECT_EQ(decide(mine, permits(2)), HolderGrant::permits_differ);
  std::vector<Holder> writing{holder(HolderMode::exclusive, kNow + 1, true)};
  EXPECT_EQ(decide(writing, kExclusive), HolderGrant::same_token);
  EXPECT_EQ(decide(writing, kShared), HolderGrant::other_mode);
  // Past its expiry the owner's grant is no longer its own to extend.
  Holder delayed = holder(HolderMode::exclusive, kNow - kSecond, true);
  delayed.grant.lock_delay = 2 * kSecond;
  EXPECT_EQ(decide({delayed}, kExclusive), HolderGrant::busy);
}

TEST(DecideHolderGrant, AtMostMaxReadersShare) {
  std::vector<Holder> full(kMaxReaders - 1, reader(kNow + kSecond));
  EXPECT_EQ(decide(full, kShared), HolderGrant::new_holder);
  full.push_back(reader(kNow + kSecond));
  EXPECT_EQ(decide(full, kShared), HolderGrant::busy);
  // The owner of one of them gets its grant back all the same.
  full[0].grant.same_owner = true;
  EXPECT_EQ(decide(full, kShared), HolderGrant::same_token);
  full[0].grant.same_owner = false;
  // A reader that has gone makes room; one in its lock-delay does not.
  full[1] = released(full[1]);
  EXPECT_EQ(decide(full, kShared), HolderGrant::new_holder);
  full[1] = reader(kNow - kSecond);
  full[1].grant.lock_delay = 2 * kSecond;
  EXPECT_EQ(decide(full, kShared), HolderGrant::busy);
}

TEST(DecideHolderGrant, ASemaphoreGrantsUpToItsPermits) {
  std::vector<Holder> two{permit(3, kNow + kSecond), permit(3, kNow + kSecond)};
  EXPECT_EQ(decide(two, permits(3)), HolderGrant::new_holder);
  two.push_back(permit(3, kNow + kSecond));
  EXPECT_EQ(decide(two, permits(3)), HolderGrant::busy);
  two[0] = released(two[0]);
  EXPECT_EQ(decide(two, permits(3)), HolderGrant::new_holder);
  std::vector<Holder> mine{holder(HolderMode::exclusive, kNow + 1, true, 3)};
  EXPECT_EQ(decide(mine, permits(3)), HolderGrant::same_token);
}

TEST(DecideHolderGrant, APermitCountHoldsWhileAnyoneOccupies) {
  std::vector<Holder> one{permit(3, kNow + kSecond)};
  EXPECT_EQ(permits_in_force(one.data(), one.size(), kNow), 3);
  EXPECT_EQ(decide(one, permits(2)), HolderGrant::permits_differ);
  EXPECT_EQ(decide(one, kExclusive), HolderGrant::permits_differ);
  EXPECT_EQ(decide(one, kShared), HolderGrant::permits_differ);
  EXPECT_EQ(decide({writer(kNow + kSecond)}, permits(2)),
            HolderGrant::permits_differ);
  // With nobody left, the next grant sets the count.
  std::vector<Holder> gone{permit(3, kNow - kSecond)};
  EXPECT_EQ(permits_in_force(gone.data(), gone.size(), kNow), 0);
  EXPECT_EQ(decide(gone, permits(2)), HolderGrant::new_holder);
}

TEST(HoldersFreeAt, NowWhenItCouldBeGranted) {
  EXPECT_EQ(free_at({}, kExclusive), kNow);
}

TEST(HoldersFreeAt, AReaderWaitsForTheFirstOfMaxReadersToLeave) {
  std::vector<Holder> full(kMaxReaders, reader(kNow + 3 * kSecond));
  full[7] = reader(kNow + kSecond);
  full[9] = reader(kNow + 2 * kSecond);
  EXPECT_EQ(free_at(full, kShared), kNow + kSecond);
  // With one more, the second has to leave too.
  full.push_back(reader(kNow + 3 * kSecond));
  EXPECT_EQ(free_at(full, kShared), kNow + 2 * kSecond);
  // A writer in its lock-delay as well: the later of the two.
  Holder delayed = writer(kNow - kSecond);
  delayed.grant.lock_delay = 5 * kSecond;
  full.push_back(delayed);
  EXPECT_EQ(free_at(full, kShared), kNow + 4 * kSecond);
}

TEST(HoldersFreeAt, AWriterWaitsForTheLastOccupant) {
  std::vector<Holder> readers{reader(kNow + 2 * kSecond),
                              reader(kNow + kSecond)};
  EXPECT_EQ(free_at(readers, kExclusive), kNow + 2 * kSecond);
}

TEST(HoldersFreeAt, AReaderWaitsOnlyForWriters) {
  Holder delayed = writer(kNow + kSecond);
  delayed.grant.lock_delay = kSecond;
  std::vector<Holder> both{delayed, reader(kNow + 5 * kSecond)};
  EXPECT_EQ(free_at(both, kShared), kNow + 2 * kSecond);
}

TEST(HoldersFreeAt, ASemaphoreWaitsForTheFirstPermitToFree) {
  std::vector<Holder> full{permit(3, kNow + 3 * kSecond),
                           permit(3, kNow + kSecond),
                           permit(3, kNow + 2 * kSecond)};
  EXPECT_EQ(free_at(full, permits(3)), kNow + kSecond);
  EXPECT_EQ(free_at(full, permits(2)), kInt64Max);
}

}  // namespace
}  // namespace dlock
