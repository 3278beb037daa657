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
  Micros ttl;
  Micros lock_delay;  // 0: none
  Micros max_hold;    // 0: none
};
DLOCK_PLAIN_STRUCT(LeaseRequest);

// try_acquire(name, ttl, owner, lock_delay, max_hold) and acquire(name,
// ttl, timeout, owner, lock_delay, max_hold): owner_argno is owner's place.
LeaseRequest lease_request(FunctionCallInfo fcinfo, int owner_argno);

struct Granted {
  int64 token;
  TimestampTz acquired_at;
  TimestampTz expires_at;
};
DLOCK_PLAIN_STRUCT(Granted);

// One attempt. Returns true and fills *out if granted; the grant then
// commits durably. When busy, *holder_left is the time until the lease is
// free (0 if unknown). A lease held by another owner costs one index read:
// no WAL, no row lock.
bool attempt_grant(const LeaseRequest& req, Granted* out, Micros* holder_left);

}  // namespace dlock::pg
