// How durably dlock's writes commit. A token once returned must survive a
// crash and a failover to a synchronous standby, so grants and renewals
// commit at least as durably as the server is configured, whatever the
// session set; a release that is its transaction's only write skips the
// WAL flush, since losing it in a crash only means the lease expires by its
// TTL.
#pragma once

#include "pg_headers.h"

namespace dlock::pg {

// Registers the transaction callback; called once, from _PG_init().
void register_durability_callback();

// Makes the current transaction commit at least as durably as the server
// is configured to (the reset value of synchronous_commit, waiting for
// synchronous standbys if that says so), and never below a local WAL flush.
void commit_durably();

// Called by a release after its write succeeded. If that write was the
// first of the transaction and nothing else writes WAL before commit, the
// commit skips the WAL flush (synchronous_commit = off for that commit).
void note_release_write(bool was_first_write);

}  // namespace dlock::pg
