// A grant of a lease (try_acquire, acquire): src/core decides on the row
// read, the write happens with the lease's gate held, and a row another
// transaction wrote meanwhile is read and decided again.
#pragma once

#include "boundary.h"
#include "pg_headers.h"

namespace dlock::pg {

// The checked arguments of try_acquire() and acquire().
struct LeaseRequest {
  const char* name;
  const char* owner;
  bool explicit_owner;  // false: the session's default owner
  Micros ttl;
  Micros lock_delay;  // 0: none
  Micros max_hold;    // 0: none
  Micros min_hold;    // 0: none
};
DLOCK_PLAIN_STRUCT(LeaseRequest);

// try_acquire(name, ttl, owner, lock_delay, max_hold, min_hold) and
// acquire(name, ttl, timeout, owner, ...): owner_argno is owner's place.
LeaseRequest lease_request(FunctionCallInfo fcinfo, int owner_argno);

struct Granted {
  int64 token;
  TimestampTz acquired_at;
  TimestampTz expires_at;
};
DLOCK_PLAIN_STRUCT(Granted);

enum class Attempt {
  granted,    // *out filled; the grant commits durably
  busy,       // held, in flight elsewhere, or others are queued
  timed_out,  // the head's wait for an in-flight write reached the deadline
};

// Who attempts: a caller outside the lease's queue (try_acquire, and
// acquire before it queues) gives way to queued waiters and to writes in
// flight; the queue's head waits for a write in flight (until `deadline`),
// so that a deadlock through an uncommitted grant is seen by PostgreSQL.
struct Attempter {
  bool head;
  Deadline deadline;  // the head's
};
DLOCK_PLAIN_STRUCT(Attempter);
inline const Attempter kOutsideQueue{false, Deadline::never()};

// One attempt. When busy, *free_in is the time until the holder's grant
// frees the lease (0 if unknown). A lease held by another owner costs one
// index read: no WAL, no row lock. Only an explicit owner re-enters a
// lease it holds (same token): the default owner is a backend's, and a
// transaction pooler shares a backend among many clients.
Attempt attempt_grant(const LeaseRequest& req, const Attempter& who,
                      Granted* out, Micros* free_in);

}  // namespace dlock::pg
