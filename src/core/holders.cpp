#include "holders.h"

#include <algorithm>
#include <vector>

namespace dlock {

namespace {

bool is_reader_request(const HolderRequest& request) {
  return request.permits == 1 && request.mode == HolderMode::shared;
}

// Whether `holder` keeps `request` out while it occupies the name. Other
// readers keep a reader out only together, kMaxReaders of them: see
// must_leave.
bool in_the_way(const Holder& holder, const HolderRequest& request) {
  return !is_reader_request(request) || holder.mode == HolderMode::exclusive;
}

// When each occupant that keeps `request` out leaves (its free_at()),
// earliest first.
std::vector<Micros> in_the_way_until(const Holder* holders, std::size_t count,
                                     const HolderRequest& request, Micros now) {
  std::vector<Micros> leaving;
  for (std::size_t i = 0; i < count; ++i) {
    if (occupies(holders[i].grant, now) && in_the_way(holders[i], request)) {
      leaving.push_back(free_at(holders[i].grant));
    }
  }
  std::sort(leaving.begin(), leaving.end());
  return leaving;
}

// How many of them must leave first: a semaphore has room for permits - 1
// others.
std::size_t must_leave(const std::vector<Micros>& in_the_way,
                       const HolderRequest& request) {
  std::size_t room = static_cast<std::size_t>(request.permits - 1);
  return in_the_way.size() > room ? in_the_way.size() - room : 0;
}

// When each reader occupying the name leaves, earliest first.
std::vector<Micros> readers_until(const Holder* holders, std::size_t count,
                                  Micros now) {
  std::vector<Micros> leaving;
  for (std::size_t i = 0; i < count; ++i) {
    if (occupies(holders[i].grant, now) &&
        holders[i].mode == HolderMode::shared && holders[i].permits == 1) {
      leaving.push_back(free_at(holders[i].grant));
    }
  }
  std::sort(leaving.begin(), leaving.end());
  return leaving;
}

// How many readers must leave before another reader fits.
std::size_t readers_over(const std::vector<Micros>& readers) {
  return readers.size() >= kMaxReaders ? readers.size() - kMaxReaders + 1 : 0;
}

}  // namespace

bool occupies(const LeaseGrant& grant, Micros now) {
  switch (lease_state(grant, now)) {
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

int permits_in_force(const Holder* holders, std::size_t count, Micros now) {
  for (std::size_t i = 0; i < count; ++i) {
    if (occupies(holders[i].grant, now)) return holders[i].permits;
  }
  return 0;
}

HolderGrant decide_holder_grant(const Holder* holders, std::size_t count,
                                const HolderRequest& request, Micros now) {
  for (std::size_t i = 0; i < count; ++i) {
    const Holder& holder = holders[i];
    if (!holder.grant.same_owner || !is_held(holder.grant, now)) continue;
    if (holder.permits != request.permits) return HolderGrant::permits_differ;
    return holder.mode == request.mode ? HolderGrant::same_token
                                       : HolderGrant::other_mode;
  }
  int in_force = permits_in_force(holders, count, now);
  if (in_force != 0 && in_force != request.permits) {
    return HolderGrant::permits_differ;
  }
  std::vector<Micros> leaving = in_the_way_until(holders, count, request, now);
  if (must_leave(leaving, request) != 0) return HolderGrant::busy;
  if (is_reader_request(request) &&
      readers_over(readers_until(holders, count, now)) != 0) {
    return HolderGrant::busy;
  }
  return HolderGrant::new_holder;
}

Micros holders_free_at(const Holder* holders, std::size_t count,
                       const HolderRequest& request, Micros now) {
  switch (decide_holder_grant(holders, count, request, now)) {
    case HolderGrant::new_holder:
    case HolderGrant::same_token:
      return now;
    case HolderGrant::other_mode:
    case HolderGrant::permits_differ:
      return INT64_MAX;
    case HolderGrant::busy:
      break;
  }
  // The request fits once the n-th earliest of those in the way has left;
  // a reader, once every writer has left and enough readers have.
  std::vector<Micros> leaving = in_the_way_until(holders, count, request, now);
  std::size_t n = must_leave(leaving, request);
  Micros at = n == 0 ? now : leaving[n - 1];
  if (is_reader_request(request)) {
    std::vector<Micros> readers = readers_until(holders, count, now);
    std::size_t over = readers_over(readers);
    if (over != 0) at = std::max(at, readers[over - 1]);
  }
  return at;
}

}  // namespace dlock
