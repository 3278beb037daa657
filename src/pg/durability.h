// How durably dlock's writes commit. A grant once returned must survive a
// crash and a failover to a synchronous standby, so grants and renewals
// never commit below synchronous_commit = on, whatever the session set; a
// release that is its transaction's only write skips the
// WAL flush, since losing it in a crash only means the lease expires by its
// TTL.
#pragma once

#include "boundary.h"

namespace dlock::pg {

// Registers the transaction callback; called once, from _PG_init().
void register_durability_callback();

// Makes the current transaction commit at least as synchronous_commit = on
// would (a local WAL flush, and the synchronous standbys' when there are
// any), or remote_apply when that is the session's reset value, whatever
// the session, its role, its database or its connection options set.
void commit_durably();

// Called by a release after its write succeeded. If that write was the
// first of the transaction and nothing else writes WAL before commit, the
// commit skips the WAL flush (synchronous_commit = off for that commit).
void note_release_write(bool was_first_write);

}  // namespace dlock::pg
