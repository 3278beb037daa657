// The rules of a lease, as pure functions: its state, the grant decision,
// max_hold's cap, and why a token no longer holds its lease. All times are
// microseconds on one clock (the server's clock_timestamp(); the glue
// passes it in), so these are deterministic and testable without a server.
//
// lease_state() is the one definition of a lease's state: SQL reaches it
// through dlock.lease_state(), which the views and the sweep use.
#pragma once
#include "plain_cpp.h"

#include <cstdint>
#include <optional>

#include "duration.h"

namespace dlock {

// One grant of a lease, as these rules judge it: the facts of a stored
// lease row (src/pg's LeaseRow, decoded) that decide its state, as last
// committed and seen without locking it.
struct LeaseGrant {
  std::int64_t token = 0;
  Micros expires_at = 0;
  bool released = false;
  bool same_owner = false;    // its owner is the caller's owner
  Micros lock_delay = 0;      // Chubby's lock-delay, after an unreleased expiry
  Micros min_hold_until = 0;  // acquired_at + min_hold; 0: no min_hold
};

enum class LeaseState {
  held,            // granted, not released, unexpired
  lock_delay,      // expired without release, inside its lock-delay: not free
  expired,         // expired without release, past its lock-delay: free
  released,        // released (or force-released): free
  released_early,  // released inside its min_hold: not free until it ends
};

// When another owner may take the lease: once released, at the end of its
// min_hold (ShedLock's lockAtLeastFor: a job that finished early still
// keeps the lease for its period); else at expiry plus the lock-delay (a
// holder that vanished without releasing may still be writing; the delay
// gives its writes time to drain). Saturates instead of overflowing (SQL
// may pass 'infinity').
inline Micros free_at(const LeaseGrant& grant) {
  if (grant.released) return grant.min_hold_until;
  return saturated_sum(grant.expires_at, grant.lock_delay);
}

// The state at `now`. Expiry is exclusive: a lease expiring at `now` is no
// longer held, and one whose lock-delay ends at `now` is free.
LeaseState lease_state(const LeaseGrant& grant, Micros now);

// The state's name in SQL: "held", "lock-delay", "expired", "released",
// "released-early".
const char* state_name(LeaseState state);

inline bool is_held(const LeaseGrant& grant, Micros now) {
  return lease_state(grant, now) == LeaseState::held;
}

// The expiry a grant or renewal at `now` for `ttl` gets, capped at
// acquired_at + max_hold when the lease has a max_hold (> 0). Saturates
// like free_at() (a row's acquired_at may be 'infinity').
inline Micros capped_expiry(Micros now, Micros ttl, Micros acquired_at,
                            Micros max_hold) {
  Micros expiry = saturated_sum(now, ttl);
  if (max_hold > 0) {
    Micros cap = saturated_sum(acquired_at, max_hold);
    if (expiry > cap) expiry = cap;
  }
  return expiry;
}

// What an acquisition does with the lease it found.
enum class Grant {
  busy,        // held by another owner, or in its lock-delay or min_hold
  create,      // no row yet: insert one with a new token
  new_token,   // free (released or expired): take it with a new token
  same_token,  // already held by this owner: extend, keep the token
};

Grant decide_grant(const std::optional<LeaseGrant>& grant, Micros now);

// Why (name, token) does not hold its lease.
enum class NotHeld {
  held,           // it does hold it
  never_granted,  // no such lease, or a token no grant of it ever had
  released,
  expired,
  newer_token,  // the lease was granted again with a larger token
};

NotHeld why_not_held(const std::optional<LeaseGrant>& grant, std::int64_t token,
                     Micros now);

// A sentence for the DETAIL of LD002, e.g. "The lease expired".
const char* describe(NotHeld reason);

}  // namespace dlock
