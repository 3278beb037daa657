// The rules of a lease, as pure functions: argument validation, TTL and
// time arithmetic on the server clock, the grant decision, and why a token no
// longer holds its lease. All times are microseconds on one clock (the
// server's clock_timestamp(); the glue passes it in), so these functions are
// deterministic and testable without a server.
#pragma once
#ifdef POSTGRES_H
#error "src/core is plain C++ and must not see PostgreSQL headers"
#endif

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlock {

using Micros = std::int64_t;

inline constexpr Micros kMicrosPerSecond = 1'000'000;
inline constexpr Micros kMicrosPerDay = 86'400 * kMicrosPerSecond;
inline constexpr int kDaysPerMonth = 30;  // as PostgreSQL's interval comparison

// Longest lease name and owner, in bytes of the database encoding.
inline constexpr std::size_t kMaxNameBytes = 255;
inline constexpr std::size_t kMaxOwnerBytes = 255;

// An SQL interval's three fields, as PostgreSQL stores them.
struct IntervalFields {
  Micros time = 0;
  std::int32_t days = 0;
  std::int32_t months = 0;
};

// The interval as an exact duration: a day is 24 h and a month 30 days, the
// same linear view PostgreSQL uses to compare intervals. Throws 22023 if the
// result does not fit in 64 bits.
Micros duration(const IntervalFields& interval, const char* what);

// A duration for messages: "1500 ms", or "1500.25 ms" when not whole.
std::string describe_duration(Micros us);

// Lease (or resource) name: non-empty, at most kMaxNameBytes. Throws 22023;
// `what` names it in the message.
void check_name(std::string_view name, const char* what = "lease name");

// Explicit owner: non-empty, at most kMaxOwnerBytes. Throws 22023.
void check_owner(std::string_view owner);

// TTL as an exact duration; must be > 0 and <= max_ttl. Throws 22023.
Micros check_ttl(const IntervalFields& ttl, Micros max_ttl);

// Acquire timeout as an exact duration; must be >= 0. Throws 22023.
Micros check_timeout(const IntervalFields& timeout);

// A lease row as last committed, seen without locking it.
struct LeaseRow {
  std::int64_t token = 0;
  Micros expires_at = 0;
  bool released = false;
  bool same_owner = false;  // row owner equals the caller's owner
  Micros lock_delay = 0;    // Chubby's lock-delay, after an unreleased expiry
};

// True if the row is held (not released, unexpired) at `now`.
inline bool is_held(const LeaseRow& row, Micros now) {
  return !row.released && row.expires_at > now;
}

// When another owner may take the lease: at once if released, else at
// expiry plus the lock-delay (a holder that vanished without releasing may
// still be writing; the delay gives its writes time to drain).
inline Micros free_at(const LeaseRow& row) {
  return row.released ? 0 : row.expires_at + row.lock_delay;
}

// The expiry a grant or renewal at `now` for `ttl` gets, capped at
// acquired_at + max_hold when the lease has a max_hold (> 0).
inline Micros capped_expiry(Micros now, Micros ttl, Micros acquired_at,
                            Micros max_hold) {
  Micros expiry = now + ttl;
  if (max_hold > 0 && expiry > acquired_at + max_hold) {
    expiry = acquired_at + max_hold;
  }
  return expiry;
}

// Lock-delay or max_hold argument: absent means none; must be >= 0 (0 is
// none) and at most max_ttl. Throws 22023.
Micros check_optional_duration(const std::optional<IntervalFields>& value,
                               const char* what, Micros max_ttl);

// What an acquisition does with the lease it found.
enum class Grant {
  busy,        // held by another owner, or in its lock-delay: NULL
  create,      // no row yet: insert one with a new token
  new_token,   // free (released or expired): take it with a new token
  same_token,  // already held by this owner: extend, keep the token
};

Grant decide_grant(const std::optional<LeaseRow>& row, Micros now);

// Why (name, token) does not hold its lease.
enum class NotHeld {
  held,           // it does hold it
  never_granted,  // no such lease, or a token no grant of it ever had
  released,
  expired,
  newer_token,  // the lease was granted again with a larger token
};

NotHeld why_not_held(const std::optional<LeaseRow>& row, std::int64_t token,
                     Micros now);

// A sentence for the DETAIL of LD002, e.g. "The lease expired".
const char* describe(NotHeld reason);

}  // namespace dlock
