// A grant of a lease (try_acquire, acquire): src/core decides on the rows
// read (the lease_store row, and the holders of a shared lease or a
// semaphore), the write happens with the lease's gate held, and a row
// another transaction wrote meanwhile is read and decided again.
#pragma once

#include "../core/deadline.h"
#include "../core/duration.h"

#include "boundary.h"

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
  bool shared;        // one of a shared lease's holders
  int permits;        // 1: an ordinary lease; N: a permit of a semaphore
};
DLOCK_PLAIN_STRUCT(LeaseRequest);

// try_acquire(name, ttl, owner, lock_delay, max_hold, min_hold, shared,
// permits) and acquire(name, ttl, timeout, owner, ...): owner_argno is
// owner's place. Before the update to 0.7.0 the functions lack the last
// two arguments (an ordinary lease).
LeaseRequest lease_request(FunctionCallInfo fcinfo, int owner_argno);

// The same without the name (name NULL), for the multi-lease functions:
// (names, ttl, owner, lock_delay, max_hold, min_hold), the shared and
// permits arguments missing.
LeaseRequest lease_terms(FunctionCallInfo fcinfo, int owner_argno);

// `terms` for the lease `name`.
LeaseRequest lease_request_for(const LeaseRequest& terms, const char* name);

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

// One attempt. When busy, *free_in is the time until the holders' grants
// leave room (0 if unknown). A lease held by another owner costs one index
// read (two for a shared or semaphore request): no WAL, no row lock. Only an
// explicit owner re-enters a lease it holds (same token): the default owner is
// a backend's, and a transaction pooler shares a backend among many clients. An
// owner asking for the lease in the other mode than it holds it gets LD004; a
// permit count other than the holders' gets 22023.
Attempt attempt_grant(const LeaseRequest& req, const Attempter& who,
                      Granted* out, Micros* free_in);

// attempt_grant() in its parts, for grants of several leases at once:
// what a grant of `req` would be as this transaction sees the lease (no
// lock, no write; *free_in as above) ...
enum class GrantPreview {
  busy,
  new_grant,   // a new token
  same_token,  // the owner's retry of its held grant (it never queues)
};
GrantPreview preview_grant(const LeaseRequest& req, Micros* free_in);
// ... and, once the caller holds the lease's gate, the grant: decided
// again on the rows as committed now, and written; busy gives the gate
// back.
Attempt grant_holding_gate(const LeaseRequest& req, Granted* out,
                           Micros* free_in);

// acquire: the first attempt, then the lease's queue (lease_queue.h),
// then as its head until the lease has room, woken by releases and at the
// holders' free_at. False when `deadline` came first (not queued any
// more). The queue lock stays until the transaction ends: the next waiter
// becomes head once the lease it waits for is visibly held.
bool acquire_until(const LeaseRequest& req, Deadline deadline, Granted* out);

// 0A000 for a wait in a REPEATABLE READ or SERIALIZABLE transaction, whose
// snapshot would never see the lease released. `function` names the call,
// `instead` the one that does not wait.
void refuse_waits_in_snapshot(const char* function, const char* instead);

// 55P03: `name` was not granted within `timeout`.
[[noreturn]] void raise_timed_out(const char* name, Micros timeout);

}  // namespace dlock::pg
