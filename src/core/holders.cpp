#include "holders.h"

#include <algorithm>

namespace dlock {

namespace {

bool occupies(const Holder& holder, Micros now) {
  switch (lease_state(holder.row, now)) {
    case LeaseState::held:
    case LeaseState::lock_delay:
    case LeaseState::released_early:
      return true;
    case LeaseState::expired:
    case LeaseState::released:
      return false;
  }
  return true;
}

// How many occupants must leave before `request` fits, or -1 if leaving
// occupants alone will not make it fit.
int occupants_in_the_way(const std::vector<Holder>& holders,
                         const HolderRequest& request, bool writer_waits,
                         Micros now) {
  int occupants = 0, exclusive = 0;
  for (const Holder& holder : holders) {
    if (!occupies(holder, now)) continue;
    ++occupants;
    if (holder.mode == HolderMode::exclusive) ++exclusive;
  }
  if (request.permits > 1) return std::max(0, occupants - request.permits + 1);
  if (request.mode == HolderMode::exclusive) return occupants;
  if (writer_waits) return -1;
  return exclusive;
}

}  // namespace

HolderGrant decide_holder_grant(const std::vector<Holder>& holders,
                                int permits_in_force,
                                const HolderRequest& request, bool writer_waits,
                                Micros now) {
  bool occupied = false;
  for (const Holder& holder : holders) {
    if (!occupies(holder, now)) continue;
    occupied = true;
    if (holder.row.same_owner && is_held(holder.row, now)) {
      return holder.mode == request.mode ? HolderGrant::same_token
                                         : HolderGrant::other_mode;
    }
  }
  if (occupied && permits_in_force != request.permits) {
    return HolderGrant::permits_differ;
  }
  return occupants_in_the_way(holders, request, writer_waits, now) == 0
             ? HolderGrant::new_holder
             : HolderGrant::busy;
}

Micros holders_free_at(const std::vector<Holder>& holders, int permits_in_force,
                       const HolderRequest& request, bool writer_waits,
                       Micros now) {
  switch (decide_holder_grant(holders, permits_in_force, request, writer_waits,
                              now)) {
    case HolderGrant::new_holder:
    case HolderGrant::same_token:
      return now;
    case HolderGrant::other_mode:
    case HolderGrant::permits_differ:
      return INT64_MAX;
    case HolderGrant::busy:
      break;
  }
  int in_the_way = occupants_in_the_way(holders, request, writer_waits, now);
  if (in_the_way < 0) return INT64_MAX;
  // The occupants that stand in the way leave at their free_at(); the
  // request fits once the in_the_way-th earliest of them has left (for an
  // exclusive or shared request that is the last of them). For a shared
  // request only exclusive occupants stand in the way.
  std::vector<Micros> leaving;
  for (const Holder& holder : holders) {
    if (!occupies(holder, now)) continue;
    if (request.permits == 1 && request.mode == HolderMode::shared &&
        holder.mode != HolderMode::exclusive) {
      continue;
    }
    leaving.push_back(free_at(holder.row));
  }
  std::sort(leaving.begin(), leaving.end());
  return leaving[in_the_way - 1];
}

}  // namespace dlock
