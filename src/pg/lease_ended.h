// The server's word that a grant ended other than by its holder's own
// release: NOTIFY on channel dlock_lease_ended, sent at the commit of the
// transaction that ended it (and never if it rolls back), so that a holder
// that LISTENs can stop its work at once. The payload is a JSON object:
//
//   {"name": "nightly-report", "token": 42, "reason": "force-released",
//    "by": "ops", "detail": "deploy"}
//
// by is the current role; a takeover adds "new_token" after detail.
// Nothing is queued while dlock.notify_lease_ends is off.
#pragma once

#include "boundary.h"

namespace dlock::pg {

// force_release ended the unreleased grant (name, token); detail: reason.
void notify_force_released(const char* name, int64 token, const char* reason);

// A grant with new_token replaced the unreleased grant (name, token) after
// it expired (and its lock-delay passed).
void notify_taken_over(const char* name, int64 token, int64 new_token);

// release_all released the grant (name, token).
void notify_released_all(const char* name, int64 token);

}  // namespace dlock::pg
