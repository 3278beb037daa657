// Module-wide state of the glue: settings and the release-commit rule.
#pragma once

#include "pg_glue.h"

namespace dlock {

// dlock.max_ttl, in milliseconds.
extern int max_ttl_ms;

// dlock.log_grants: log grants, takeovers, releases and force-releases.
extern bool log_grants;

// Makes the current transaction commit at least as durably as the server
// is configured to (the reset value of synchronous_commit, waiting for
// synchronous standbys if that says so), and never below a local WAL flush,
// whatever the session set. Grants and renewals call it: a token once
// returned must survive a crash and a failover to a synchronous standby.
void commit_durably();

// Called by release() after its write succeeded. If that write was the
// first of the transaction, and nothing else writes WAL before commit, the
// commit skips the WAL flush (synchronous_commit = off for that commit only):
// a release lost in a crash only means the lease expires by its TTL.
void note_release_write(bool was_first_write);

}  // namespace dlock
