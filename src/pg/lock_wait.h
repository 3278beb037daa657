// Waiting in PostgreSQL's lock manager until a deadline on the monotonic
// clock. The wait itself is the lock manager's (arrival order, deadlock
// detection, pg_locks, cancel and session exit handled as for any lock);
// dlock only ends it at the deadline.
#pragma once

#include "../core/deadline.h"

#include "boundary.h"

namespace dlock::pg {

// Takes `tag` in `mode` for the transaction, waiting at most until
// `deadline`. Returns false, holding nothing, if the deadline came first.
// Other errors (cancel, statement_timeout, a deadlock) propagate.
bool lock_until(const LOCKTAG& tag, LOCKMODE mode, Deadline deadline);

}  // namespace dlock::pg
