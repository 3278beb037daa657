// The grant decision for a name with several holders: shared leases
// (readers and writers) and semaphores (at most N holders, a lease per
// permit). Each holder is a grant of its own, judged by lease_rules.h
// (its own expiry, lock-delay and min_hold); this file only decides how
// the holders of one name combine. Pure functions on server-clock
// microseconds, testable without a server.
//
// Waiting writers are not this file's concern: a caller outside a name's
// queue gives way to anyone queued (grant.h), so new readers never pass
// a queued writer.
#pragma once
#include "plain_cpp.h"

#include <cstddef>
#include <cstdint>

#include "lease_rules.h"

namespace dlock {

enum class HolderMode { exclusive, shared };

// The most readers a shared lease may have at once, as a semaphore has at
// most kMaxPermits permits: each grant decision reads every holder of the
// name, so this bounds its cost. A reader asking when the name has this
// many is busy (NULL, or a wait), as a permit is when all are taken.
inline constexpr std::size_t kMaxReaders = 1000;

// One holder of a name, as last committed. permits: 1 for an ordinary
// lease (exclusive or shared), N for a permit of a semaphore of N.
struct Holder {
  LeaseGrant grant;  // grant.same_owner: the caller's owner holds it
  HolderMode mode = HolderMode::exclusive;
  int permits = 1;
};

// What a caller asks for: permits > 1 asks for one permit of a semaphore
// of that size, which is never shared.
struct HolderRequest {
  HolderMode mode = HolderMode::exclusive;
  int permits = 1;
};

enum class HolderGrant {
  new_holder,      // a new grant with a new token beside the holders
  same_token,      // the caller's owner already holds it this way: extend
  busy,            // no room now (a normal answer: NULL, or wait)
  other_mode,      // the caller's owner holds it in the other mode
  permits_differ,  // holders occupy it under another permit count
};

// Whether a holder still occupies its name at `now`: held, in its
// lock-delay or released early (inside its min_hold). Expired and
// released holders are gone.
bool occupies(const LeaseGrant& grant, Micros now);

// The permit count the occupants of a name hold it under (they all share
// one), or 0 if nobody occupies it.
int permits_in_force(const Holder* holders, std::size_t count, Micros now);

// The decision for `request` on a name whose holders are holders[0..count).
// An exclusive grant needs no occupant; a shared grant needs no exclusive
// occupant and fewer than kMaxReaders shared ones; a semaphore grant needs
// fewer than `permits` occupants. The
// caller's owner asking again as it holds (mode and permits) gets its grant
// back; asking otherwise is refused (other_mode, permits_differ), and so
// is any request under another permit count than the one in force.
HolderGrant decide_holder_grant(const Holder* holders, std::size_t count,
                                const HolderRequest& request, Micros now);

// When `request` could next be granted if nothing else changed (for a
// waiter's sleep): `now` if it could be granted now; else when enough
// occupants have left. INT64_MAX for a refusal.
Micros holders_free_at(const Holder* holders, std::size_t count,
                       const HolderRequest& request, Micros now);

}  // namespace dlock
