// dlock's settings (GUCs): dlock.max_ttl, dlock.max_names,
// dlock.log_grants, dlock.notify_lease_ends, dlock.track_stats and
// dlock.stats_max.
#pragma once

#include "../core/duration.h"

#include "boundary.h"

namespace dlock::pg {

// Defines the settings; called once, from _PG_init().
void define_settings();

// dlock.max_ttl as a duration.
Micros max_ttl();

// dlock.max_names: the most names one try_acquire_all or acquire_all may
// take (each takes a lock in the shared lock table until commit).
extern int max_names;

// dlock.log_grants: log grants, takeovers, releases and force-releases.
extern bool log_grants;

// dlock.notify_lease_ends: NOTIFY dlock_lease_ended when a grant ends
// other than by its holder's own release (see lease_ended.h).
extern bool notify_lease_ends;

// dlock.track_stats: count lease events in dlock.stats (see stats.h).
extern bool track_stats;

// dlock.stats_max: how many lease names dlock.stats keeps (set at start).
extern int stats_max;

}  // namespace dlock::pg
