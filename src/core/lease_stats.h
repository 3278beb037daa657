// A lease name's statistics (dlock.stats): what each event adds to its
// counters, how counters combine into totals, and which names give way
// when the table of names is full. Pure C++: the glue keeps the counters
// in shared memory (src/pg/stats.h).
#pragma once
#include "plain_cpp.h"

#include <cstddef>
#include <cstdint>

#include "duration.h"

namespace dlock {

// One name's counters since it was first counted (or since the last reset).
// Times are in microseconds.
struct LeaseCounters {
  int64_t grants = 0;         // new grants (a holder's retry is none)
  int64_t busy = 0;           // try_acquire and try_acquire_all found it busy
  int64_t waits = 0;          // acquire calls that had to wait
  int64_t wait_timeouts = 0;  // of those, the ones that timed out
  Micros total_wait = 0;      // waits ended by a grant or a timeout
  Micros max_wait = 0;
  int64_t takeovers = 0;       // expired grants ended by a new grant
  int64_t force_releases = 0;  // unreleased grants ended by force_release
  int64_t renew_failures = 0;  // renewals refused: the token did not hold
  int64_t releases = 0;        // grants ended by release or release_all
  Micros total_hold = 0;       // grants ended by a release, a force-release
  Micros max_hold = 0;         // or a takeover, from grant to end
  int64_t lapses = 0;          // grants that expired unreleased (see lapse)
  double usage = 0;            // events, aged at each eviction (not shown)
};

enum class LeaseEvent {
  grant,           // a new grant (a holder's retry of its grant is none)
  takeover,        // a grant ended by another's, `time` after it began
  busy,            // a try found the lease busy
  wait_started,    // an acquire found it busy and waits
  wait_granted,    // ... and was granted it after `time`
  wait_timed_out,  // ... or timed out after `time`
  release,         // a grant ended by its holder, held for `time`
  force_release,   // an unreleased grant ended by force_release, held
                   // for `time`
  renew_failure,   // a renewal refused: the token did not hold
  lapse,           // a grant that expired unreleased, counted once, when
                   // its row ends: taken over (by any owner, the same
                   // one included), force-released or swept after its
                   // expiry
};

// When an event is counted. The events of a grant's row (its grant, and
// how it ended) wait for the transaction's commit: a rolled-back grant
// adds no name and counts nothing, and a lapse is counted once. A busy
// answer or a wait is counted at once: someone holds the lease (or is
// writing its grant). A refused renewal is counted at once, but adds a
// name only if the name has a lease row: anyone can renew a made-up name.
enum class Counted { at_commit, now, now_if_real };
Counted when_counted(LeaseEvent event);

// How long a grant from `acquired_at` to `expires_at` was held when it
// ended at `ended_at`: never past its expiry (a takeover, or a
// force-release of an expired grant, counts to the expiry).
Micros hold_time(Micros acquired_at, Micros expires_at, Micros ended_at);

// Adds one event to `c`. A time below 0 (the wall clock stepped back)
// counts as 0; sums saturate.
void record(LeaseCounters& c, LeaseEvent event, Micros time = 0);

// Counts the first event of a name new to the table: as record(), but its
// usage starts at `median` (median_usage() at the last eviction; 1 before
// any), as pg_stat_statements does, so that names new to a full table
// rank in its middle, never above a name used more, and a burst of new
// names each used once evicts its own before the names used more.
void record_first(LeaseCounters& c, LeaseEvent event, Micros time,
                  double median);

// The median of `n` usages (the one at n / 2 in ascending order, as
// pg_stat_statements takes it); 0 if there are none. Reorders `usages`.
double median_usage(double* usages, std::size_t n);

// Adds `from` into `into`: sums, and the larger maximum.
void merge(LeaseCounters& into, const LeaseCounters& from);

// When the table of names is full, the least used go: this many of a full
// table of `entries` (at least one), and every name's usage is aged by
// kUsageDecay first, so that a name busy long ago gives way to one busy now.
std::size_t names_to_evict(std::size_t entries);
inline constexpr double kUsageDecay = 0.99;

}  // namespace dlock
