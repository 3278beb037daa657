// A lease's queue of waiters. Sessions in dlock.acquire() line up for an
// ExclusiveLock in dlock's advisory key space 4 on the hash of the lease's
// name, so PostgreSQL's lock manager keeps them in arrival order, drops
// one that is cancelled, times out or whose session ends, shows them in
// pg_locks (and dlock.lock_waits), and sees deadlocks through them. The
// session holding that lock is the head: the only waiter that waits for
// the lease itself. It sleeps on its latch until the holder's grant ends;
// a transaction that frees the lease sets that latch once it has committed
// and let go of its locks, so the head finds the lease free and its gate
// open. A release is never missed: a head that arrives after that wake-up
// reads the lease afterwards, and the head takes the gate before it reads
// (after a PREPARE TRANSACTION it waits there for COMMIT PREPARED). A
// granted head keeps its place until its transaction ends, so the next
// waiter becomes head when the grant is committed.
#pragma once

#include "../core/deadline.h"

#include "boundary.h"

namespace dlock::pg {

LOCKTAG queue_tag(const char* name);

// Whether sessions wait for the lease (try_acquire and new acquires do not
// jump them). Takes nothing.
bool others_queued(const char* name);

// Joins the queue and waits to be its head, until `deadline` (false: the
// deadline came first; not queued any more).
bool join_queue(const LOCKTAG& queue, Deadline deadline);

// Wakes the head of the lease's queue, if any, once this transaction has
// committed (or prepared) and released its locks: called by whatever
// frees the lease or brings its end closer, with the lease's gate held.
void wake_queue_head(const char* name);

// The head sleeps: until its latch is set (a release), `ms` pass, or the
// client closes its connection, which ends the session as PostgreSQL does
// for client_connection_check_interval (FATAL, 08006).
void sleep_as_head(int ms);

// Ends the session if the client has gone, so that a waiter whose client
// died is never granted a lease nobody would use or release.
void require_client(void);

}  // namespace dlock::pg
