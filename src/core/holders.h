// The grant decision for a lease with several holders: shared leases
// (readers and writers) and semaphores (at most N holders, a lease per
// permit). Each holder is a grant of its own, judged by lease_rules.h
// (its own expiry, lock-delay and min_hold); this file only decides how
// the holders of one name combine. Pure functions on server-clock
// microseconds, testable without a server.
#pragma once
#include "plain_cpp.h"

#include <cstdint>
#include <vector>

#include "lease_rules.h"

namespace dlock {

enum class HolderMode { exclusive, shared };

// One holder of a name, as last committed.
struct Holder {
  LeaseRow row;  // row.same_owner: the caller's owner holds this grant
  HolderMode mode = HolderMode::exclusive;
};

// What a caller asks for. permits = 1 is an ordinary lease (exclusive or
// shared); permits > 1 asks for one permit of a semaphore of that size,
// which is never shared.
struct HolderRequest {
  HolderMode mode = HolderMode::exclusive;
  int permits = 1;
};

enum class HolderGrant {
  new_holder,      // a new grant with a new token beside the holders
  same_token,      // the caller's owner already holds it this way: extend
  busy,            // no room now (a normal answer: NULL, or wait)
  other_mode,      // the caller's owner holds it in the other mode
  permits_differ,  // holders exist under another permit count
};

// The decision for `request` on a name whose holders are `holders`, while
// the holders' permit count is `permits_in_force` (ignored when none of
// them still occupies the name) and `writer_waits` says whether an
// exclusive request is queued for the name: then new shared grants wait
// behind it, so readers cannot starve a writer.
//
// A holder occupies the name while its lease is held, in its lock-delay
// or released early (inside its min_hold); expired and released holders
// are gone. An exclusive grant needs no occupant; a shared grant needs no
// exclusive occupant and no writer waiting; a semaphore grant needs fewer
// than `permits` occupants.
HolderGrant decide_holder_grant(const std::vector<Holder>& holders,
                                int permits_in_force,
                                const HolderRequest& request, bool writer_waits,
                                Micros now);

// When `request` could next be granted if nothing else changed (for a
// waiter's sleep): now if it could be granted now; else the earliest time
// enough occupants have left. INT64_MAX if that depends on someone else
// (a writer waiting, or the caller's own other-mode grant).
Micros holders_free_at(const std::vector<Holder>& holders, int permits_in_force,
                       const HolderRequest& request, bool writer_waits,
                       Micros now);

}  // namespace dlock
