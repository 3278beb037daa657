// A lease's queue of waiters. Sessions in dlock.acquire() line up for an
// ExclusiveLock in dlock's advisory key space 4 on the hash of the lease's
// name, so PostgreSQL's lock manager keeps them in arrival order, drops
// one that is cancelled, times out or whose session ends, shows them in
// pg_locks (and dlock.lock_waits), and sees deadlocks through them. The
// session holding that lock is the head: the only waiter that waits for
// the lease itself. It sleeps on its latch until the holder's grant ends;
// whoever releases the lease sets that latch, with the lease's gate held,
// so a release is never missed: a head that arrives later takes the gate
// (waiting for the releasing transaction) before it reads the lease.
#pragma once

#include "pg_headers.h"

namespace dlock::pg {

LOCKTAG queue_tag(const char* name);

// Whether sessions wait for the lease (try_acquire and new acquires do not
// jump them). Takes nothing.
bool others_queued(const char* name);

// Joins the queue and waits to be its head, until `deadline` (false: the
// deadline came first; not queued any more).
bool join_queue(const LOCKTAG& queue, Deadline deadline);

// Leaves the queue early (granted); the next waiter becomes head at once.
// An error leaves it with the (sub)transaction.
void leave_queue(const LOCKTAG& queue);

// Wakes the head of the lease's queue, if any: called by a release, with
// the lease's gate held.
void wake_queue_head(const char* name);

// The head sleeps: until its latch is set (a release), `ms` pass, or the
// client closes its connection, which ends the session as PostgreSQL does
// for client_connection_check_interval (FATAL, 08006).
void sleep_as_head(int ms);

// Ends the session if the client has gone, so that a waiter whose client
// died is never granted a lease nobody would use or release.
void require_client(void);

}  // namespace dlock::pg
