// A lease's gate: a lock in dlock's own advisory key space (field 4 = 3) on
// a 64-bit hash of the name (hashtextextended(name, 0) in SQL), held to the
// end of the transaction by every writer of the lease's row. Writers of one
// lease are serialised by it, so two transactions can never both create or
// take the same lease and no write waits for a row lock. User advisory
// locks (key spaces 1 and 2) never collide with it.
#pragma once

#include "boundary.h"

namespace dlock::pg {

// A lock tag in one of dlock's advisory key spaces (field 4) on the hash
// of a lease name.
LOCKTAG lease_lock_tag(const char* name, uint16 key_space);

LOCKTAG gate_tag(const char* name);

// Does not wait: false means a write of this lease is in flight elsewhere.
bool try_gate(const LOCKTAG& gate);
// Gives back a gate taken by try_gate() when nothing was written.
void release_gate(const LOCKTAG& gate);
// Waits, like any lock (renew, release, force_release).
void wait_gate(const char* name);
// Shared with other readers (assert_held): writers wait for them.
void share_gate(const char* name);

}  // namespace dlock::pg
