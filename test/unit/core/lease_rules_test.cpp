// Unit tests of src/core/lease_rules: a lease's state, the grant decision,
// max_hold's cap and why a token no longer holds its lease.
#include "lease_rules.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "test_support.h"

namespace dlock {
namespace {

using namespace dlock::testing;

constexpr Micros kNow = 1'700'000'000'000'000;  // an arbitrary server clock

LeaseGrant row(std::int64_t token, Micros expires_at, bool released,
               bool same_owner) {
  LeaseGrant r;
  r.token = token;
  r.expires_at = expires_at;
  r.released = released;
  r.same_owner = same_owner;
  return r;
}

TEST(IsHeld, ExpiryIsExclusive) {
  EXPECT_TRUE(is_held(row(1, kNow + 1, false, false), kNow));
  EXPECT_FALSE(is_held(row(1, kNow, false, false), kNow));
  EXPECT_FALSE(is_held(row(1, kNow - 1, false, false), kNow));
  EXPECT_FALSE(is_held(row(1, kNow + kHour, true, false), kNow));
}

TEST(DecideGrant, NoRowCreates) {
  EXPECT_EQ(decide_grant(std::nullopt, kNow), Grant::create);
}

TEST(DecideGrant, ReleasedTakesNewToken) {
  // Released before its expiry, by either owner.
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, true, false), kNow),
            Grant::new_token);
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, true, true), kNow),
            Grant::new_token);
  // Released and expired.
  EXPECT_EQ(decide_grant(row(7, kNow - kHour, true, false), kNow),
            Grant::new_token);
}

TEST(DecideGrant, ExpiredTakesNewToken) {
  EXPECT_EQ(decide_grant(row(7, kNow - 1, false, false), kNow),
            Grant::new_token);
  EXPECT_EQ(decide_grant(row(7, kNow - kHour, false, true), kNow),
            Grant::new_token);
}

TEST(DecideGrant, ExpiringExactlyNowCountsAsExpired) {
  EXPECT_EQ(decide_grant(row(7, kNow, false, false), kNow), Grant::new_token);
  // Even for the same owner: the old grant is over, so the token changes.
  EXPECT_EQ(decide_grant(row(7, kNow, false, true), kNow), Grant::new_token);
}

TEST(DecideGrant, HeldByOtherIsBusy) {
  EXPECT_EQ(decide_grant(row(7, kNow + 1, false, false), kNow), Grant::busy);
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, false, false), kNow),
            Grant::busy);
}

TEST(DecideGrant, HeldBySameOwnerKeepsToken) {
  EXPECT_EQ(decide_grant(row(7, kNow + 1, false, true), kNow),
            Grant::same_token);
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, false, true), kNow),
            Grant::same_token);
}

TEST(WhyNotHeld, NoRowIsNeverGranted) {
  EXPECT_EQ(why_not_held(std::nullopt, 1, kNow), NotHeld::never_granted);
}

TEST(WhyNotHeld, TokenNewerThanAnyGrantIsNeverGranted) {
  // Even when the row is held, released or expired.
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, false, false), 8, kNow),
            NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, true, false), 8, kNow),
            NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row(7, kNow - kHour, false, false), 8, kNow),
            NotHeld::never_granted);
}

TEST(WhyNotHeld, OlderTokenIsNewerToken) {
  // The token comparison wins over the row's state.
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, false, false), 6, kNow),
            NotHeld::newer_token);
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, true, false), 1, kNow),
            NotHeld::newer_token);
  EXPECT_EQ(why_not_held(row(7, kNow - kHour, false, false), 6, kNow),
            NotHeld::newer_token);
}

TEST(WhyNotHeld, ReleasedWinsOverExpired) {
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, true, false), 7, kNow),
            NotHeld::released);
  EXPECT_EQ(why_not_held(row(7, kNow - kHour, true, false), 7, kNow),
            NotHeld::released);
}

TEST(WhyNotHeld, Expired) {
  EXPECT_EQ(why_not_held(row(7, kNow - 1, false, false), 7, kNow),
            NotHeld::expired);
  EXPECT_EQ(why_not_held(row(7, kNow, false, false), 7, kNow),
            NotHeld::expired);
}

TEST(WhyNotHeld, Held) {
  EXPECT_EQ(why_not_held(row(7, kNow + 1, false, false), 7, kNow),
            NotHeld::held);
  EXPECT_EQ(why_not_held(row(7, kNow + 1, false, true), 7, kNow),
            NotHeld::held);
}

TEST(Describe, EveryReasonHasItsOwnText) {
  const NotHeld all[] = {NotHeld::held, NotHeld::never_granted,
                         NotHeld::released, NotHeld::expired,
                         NotHeld::newer_token};
  std::set<std::string> texts;
  for (NotHeld reason : all) {
    const char* text = describe(reason);
    ASSERT_NE(text, nullptr);
    EXPECT_GT(std::strlen(text), 0u);
    // A DETAIL sentence: the caller appends the period.
    EXPECT_NE(text[std::strlen(text) - 1], '.') << text;
    texts.insert(text);
  }
  EXPECT_EQ(texts.size(), sizeof all / sizeof all[0]);
}

// Lock-delay: an unreleased expiry keeps the lease busy until
// expires_at + lock_delay; a release frees it at once.
TEST(LockDelay, BusyUntilExpiryPlusDelay) {
  LeaseGrant row{5, 1'000, false, false, 500};
  EXPECT_EQ(free_at(row), 1'500);
  EXPECT_EQ(decide_grant(row, 999), Grant::busy);
  EXPECT_EQ(decide_grant(row, 1'000), Grant::busy);
  EXPECT_EQ(decide_grant(row, 1'499), Grant::busy);
  EXPECT_EQ(decide_grant(row, 1'500), Grant::new_token);
  row.same_owner = true;
  EXPECT_EQ(decide_grant(row, 999), Grant::same_token);
  EXPECT_EQ(decide_grant(row, 1'200), Grant::busy);
  row.released = true;
  EXPECT_EQ(free_at(row), 0);
  EXPECT_EQ(decide_grant(row, 999), Grant::new_token);
}

TEST(CappedExpiry, NeverPastAcquiredAtPlusMaxHold) {
  EXPECT_EQ(capped_expiry(100, 50, 0, 0), 150);      // no max_hold
  EXPECT_EQ(capped_expiry(100, 50, 0, 1'000), 150);  // under the cap
  EXPECT_EQ(capped_expiry(100, 50, 0, 120), 120);    // capped
  EXPECT_EQ(capped_expiry(100, 50, 80, 40), 120);    // cap already near
}

// An acquired_at of 'infinity' (a row written by hand) puts the cap at the
// end of time instead of wrapping it into the past.
TEST(CappedExpiry, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(capped_expiry(100, 50, kInt64Max, 10), 150);
  EXPECT_EQ(capped_expiry(100, 50, kInt64Max - 5, 10), 150);
  EXPECT_EQ(capped_expiry(kInt64Max - 10, 50, 0, 0), kInt64Max);
  EXPECT_EQ(capped_expiry(kInt64Max - 10, 50, kInt64Max, 20), kInt64Max);
}

TEST(WhyNotHeld, NonPositiveTokensWereNeverGranted) {
  LeaseGrant row{10, 1'000, false, false};
  EXPECT_EQ(why_not_held(row, 0, 0), NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row, -5, 0), NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row, 9, 0), NotHeld::newer_token);
}

// The one definition of a lease's state (SQL reaches it through
// dlock.lease_state): exclusive expiry, exclusive end of the lock-delay,
// released before anything else.
TEST(LeaseState, AtTheEdges) {
  LeaseGrant r = row(1, kNow, false, false);
  EXPECT_EQ(lease_state(r, kNow - 1), LeaseState::held);
  EXPECT_EQ(lease_state(r, kNow), LeaseState::expired);
  r.lock_delay = 1'000'000;
  EXPECT_EQ(lease_state(r, kNow - 1), LeaseState::held);
  EXPECT_EQ(lease_state(r, kNow), LeaseState::lock_delay);
  EXPECT_EQ(lease_state(r, kNow + 999'999), LeaseState::lock_delay);
  EXPECT_EQ(lease_state(r, kNow + 1'000'000), LeaseState::expired);
  r.released = true;
  EXPECT_EQ(lease_state(r, kNow - 1), LeaseState::released);
  EXPECT_EQ(lease_state(r, kNow + 1'000'000), LeaseState::released);
}

TEST(LeaseState, NamesAsSqlShowsThem) {
  EXPECT_STREQ(state_name(LeaseState::held), "held");
  EXPECT_STREQ(state_name(LeaseState::lock_delay), "lock-delay");
  EXPECT_STREQ(state_name(LeaseState::expired), "expired");
  EXPECT_STREQ(state_name(LeaseState::released), "released");
  EXPECT_STREQ(state_name(LeaseState::released_early), "released-early");
}

// Released inside its min_hold, a lease is nobody's and free for nobody
// until acquired_at + min_hold; the edge is exclusive, as for expiry.
TEST(MinHold, ReleasedEarlyStaysUnavailableUntilItEnds) {
  LeaseGrant r = row(4, kNow + 1'000'000, true, true);
  r.min_hold_until = kNow + 500;
  EXPECT_EQ(lease_state(r, kNow), LeaseState::released_early);
  EXPECT_EQ(lease_state(r, kNow + 499), LeaseState::released_early);
  EXPECT_EQ(lease_state(r, kNow + 500), LeaseState::released);
  EXPECT_EQ(free_at(r), kNow + 500);
  EXPECT_EQ(decide_grant(r, kNow + 499), Grant::busy);  // the owner too
  EXPECT_EQ(decide_grant(r, kNow + 500), Grant::new_token);
  EXPECT_EQ(why_not_held(r, 4, kNow), NotHeld::released);
  EXPECT_FALSE(is_held(r, kNow));
}

// min_hold changes nothing for a grant that is not released: it is held
// until its expiry and free after the lock-delay, as before.
TEST(MinHold, DoesNotHoldBackAnExpiry) {
  LeaseGrant r = row(4, kNow, false, false);
  r.min_hold_until = kNow + 1'000'000;
  r.lock_delay = 100;
  EXPECT_EQ(lease_state(r, kNow - 1), LeaseState::held);
  EXPECT_EQ(lease_state(r, kNow + 99), LeaseState::lock_delay);
  EXPECT_EQ(lease_state(r, kNow + 100), LeaseState::expired);
  EXPECT_EQ(decide_grant(r, kNow + 100), Grant::new_token);
}

// The grant decision and why_not_held follow the state at every instant.
TEST(LeaseState, DecisionsFollowIt) {
  for (bool released : {false, true}) {
    for (Micros delay : {Micros{0}, Micros{500}}) {
      for (Micros min_hold_until : {Micros{0}, kNow + 300}) {
        for (Micros at = kNow - 2; at <= kNow + 502; ++at) {
          LeaseGrant r = row(3, kNow, released, false);
          r.lock_delay = delay;
          r.min_hold_until = min_hold_until;
          LeaseState state = lease_state(r, at);
          Grant grant = decide_grant(r, at);
          EXPECT_EQ(grant == Grant::busy,
                    state == LeaseState::held ||
                        state == LeaseState::lock_delay ||
                        state == LeaseState::released_early)
              << at;
          EXPECT_EQ(is_held(r, at), state == LeaseState::held) << at;
          EXPECT_EQ(why_not_held(r, 3, at) == NotHeld::held,
                    state == LeaseState::held)
              << at;
          EXPECT_EQ(free_at(r) > at, grant == Grant::busy) << at;
        }
      }
    }
  }
}

}  // namespace
}  // namespace dlock
