// dlock.lease_state(): src/core's lease_state() for SQL, so that the views
// and the sweep judge a lease exactly as the lease functions do.

#include "../core/duration.h"
#include "../core/lease_rules.h"

#include "boundary.h"
#include "intervals.h"

// dlock.lease_state(released_at timestamptz, expires_at timestamptz,
//                   lock_delay interval, at timestamptz,
//                   min_hold_until timestamptz DEFAULT NULL) RETURNS text
DLOCK_FUNCTION(dlock_lease_state) {
  if (PG_ARGISNULL(1) || PG_ARGISNULL(3)) PG_RETURN_NULL();
  dlock::LeaseGrant grant;
  grant.released = !PG_ARGISNULL(0);
  grant.expires_at = PG_GETARG_TIMESTAMPTZ(1);
  // Any interval gets an answer (dlock.lease_state raises no error).
  grant.lock_delay = PG_ARGISNULL(2)
                         ? 0
                         : dlock::saturated_duration(dlock::pg::interval_fields(
                               PG_GETARG_INTERVAL_P(2)));
  if (PG_NARGS() > 4 && !PG_ARGISNULL(4)) {
    grant.min_hold_until = PG_GETARG_TIMESTAMPTZ(4);
  }
  dlock::LeaseState state = dlock::lease_state(grant, PG_GETARG_TIMESTAMPTZ(3));
  PG_RETURN_TEXT_P(cstring_to_text(dlock::state_name(state)));
}
