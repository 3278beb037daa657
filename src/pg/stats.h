// dlock.stats: the counters (src/core/lease_stats.h) of each lease name of
// each database in shared memory, at most dlock.stats_max entries; each
// database sees and resets its own. The memory exists only
// when dlock is in shared_preload_libraries; otherwise nothing is counted
// and dlock.stats_status() says why. The events of a grant's row count
// when its transaction commits (a rolled-back grant adds no name); busy
// answers and waits count at once; a refused renewal too, but it adds a
// name only if the name has a lease row (src/core/lease_stats.h,
// when_counted).
#pragma once

#include "../core/duration.h"
#include "../core/lease_stats.h"

#include "boundary.h"

namespace dlock::pg {

// Asks for the shared memory and sets it up at start; called by _PG_init()
// while shared_preload_libraries are being loaded.
void request_stats_memory();

// Counts `event` of lease `name` (`time` as record() reads it), if
// statistics are on: now, or at the commit of the transaction (see
// dlock::when_counted).
void count_event(const char* name, dlock::LeaseEvent event, Micros time = 0);

}  // namespace dlock::pg
