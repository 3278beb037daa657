#include <algorithm>
#include <cstddef>
#include <optional>

#include "../core/arguments.h"
#include "../core/duration.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"
#include "../core/lease_stats.h"

#include "stats.h"
#include "boundary.h"
#include "holder_rows.h"
#include "lease_row.h"
#include "settings.h"

namespace dlock::pg {

namespace {

constexpr const char* kStatsTranche = "dlock_stats";

// A lease name of a database; an empty name (no lease has one) keys the
// database's own entry: what its evicted names counted, and since when.
struct StatsKey {
  Oid dbid;
  char name[dlock::kMaxNameBytes + 1];  // zero-padded: the key is hashed whole
};
DLOCK_PLAIN_STRUCT(StatsKey);

struct StatsEntry {
  StatsKey key;
  slock_t mutex;  // guards counters
  dlock::LeaseCounters counters;
  TimestampTz since;  // a name: first counted; a database: last reset
  int64 evictions;    // a database's entry: its names evicted since
};
DLOCK_PLAIN_STRUCT(StatsEntry);

struct StatsShared {
  LWLock* lock;  // shared: counting and reading; exclusive: adding, removing
  TimestampTz started_at;
  double median_usage;  // of the names left by the last eviction: where a
                        // new name's usage starts (lock held exclusive)
};
DLOCK_PLAIN_STRUCT(StatsShared);

StatsShared* shared = nullptr;
HTAB* entries = nullptr;
shmem_request_hook_type previous_request = nullptr;
shmem_startup_hook_type previous_startup = nullptr;

Size stats_memory_size() {
  return add_size(MAXALIGN(sizeof(StatsShared)),
                  hash_estimate_size(stats_max, sizeof(StatsEntry)));
}

extern "C" {
static void request_memory() {
  if (previous_request) previous_request();
  RequestAddinShmemSpace(stats_memory_size());
  RequestNamedLWLockTranche(kStatsTranche, 1);
}

static void attach_memory() {
  if (previous_startup) previous_startup();
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  bool found;
  shared = static_cast<StatsShared*>(
      ShmemInitStruct("dlock stats", sizeof(StatsShared), &found));
  if (!found) {
    shared->lock = &GetNamedLWLockTranche(kStatsTranche)->lock;
    shared->started_at = GetCurrentTimestamp();
    shared->median_usage = 0;
  }
  HASHCTL info;
  info.keysize = sizeof(StatsKey);
  info.entrysize = sizeof(StatsEntry);
  entries = ShmemInitHash("dlock stats entries", stats_max, stats_max, &info,
                          HASH_ELEM | HASH_BLOBS);
  LWLockRelease(AddinShmemInitLock);
}
}  // extern "C"

StatsKey key_of(Oid dbid, const char* name) {
  StatsKey key;
  memset(&key, 0, sizeof(key));
  key.dbid = dbid;
  strlcpy(key.name, name, sizeof(key.name));
  return key;
}

bool is_database_entry(const StatsEntry* e) { return e->key.name[0] == '\0'; }

StatsEntry* find(const StatsKey& key) {
  return static_cast<StatsEntry*>(
      hash_search(entries, &key, HASH_FIND, nullptr));
}

bool by_usage(const StatsEntry* a, const StatsEntry* b) {
  return a->counters.usage < b->counters.usage;
}

// Makes room: ages every name's usage and removes the least used names,
// whatever their database, keeping their counts in their database's entry;
// the median usage of those left is where new names start. Lock held
// exclusive. Runs at commit too (pending events): it raises no error, and
// without memory for its arrays evicts nothing.
void evict() {
  long n = hash_get_num_entries(entries);
  auto** all = static_cast<StatsEntry**>(MemoryContextAllocExtended(
      CurrentMemoryContext, sizeof(StatsEntry*) * (n + 1), MCXT_ALLOC_NO_OOM));
  auto* usages = static_cast<double*>(MemoryContextAllocExtended(
      CurrentMemoryContext, sizeof(double) * (n + 1), MCXT_ALLOC_NO_OOM));
  if (all == nullptr || usages == nullptr) {
    if (all != nullptr) pfree(all);
    if (usages != nullptr) pfree(usages);
    return;
  }
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, entries);
  long i = 0;
  while (auto* e = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
    if (is_database_entry(e)) continue;
    e->counters.usage *= dlock::kUsageDecay;
    all[i++] = e;
  }
  std::size_t gone = std::min<std::size_t>(dlock::names_to_evict(stats_max), i);
  std::partial_sort(all, all + gone, all + i, by_usage);
  for (std::size_t k = 0; k < gone; ++k) {
    if (StatsEntry* database = find(key_of(all[k]->key.dbid, ""))) {
      dlock::merge(database->counters, all[k]->counters);
      ++database->evictions;
    }
    (void)hash_search(entries, &all[k]->key, HASH_REMOVE, nullptr);
  }
  long left = 0;
  for (long k = static_cast<long>(gone); k < i; ++k) {
    usages[left++] = all[k]->counters.usage;
  }
  shared->median_usage = dlock::median_usage(usages, left);
  pfree(usages);
  pfree(all);
}

// Adds the entry of `key` (evicting names when the table is full), or
// finds it; NULL if there is no room. Lock held exclusive.
StatsEntry* add(const StatsKey& key, TimestampTz since) {
  StatsEntry* e = find(key);
  if (e != nullptr) return e;
  if (hash_get_num_entries(entries) >= stats_max) evict();
  bool found;
  e = static_cast<StatsEntry*>(
      hash_search(entries, &key, HASH_ENTER_NULL, &found));
  if (e != nullptr && !found) {
    SpinLockInit(&e->mutex);
    e->counters = dlock::LeaseCounters{};
    e->since = since;
    e->evictions = 0;
  }
  return e;
}

// Counts `event` of `name` in this database. A name not in the table is
// added only if `may_add` (with the database's own entry first), its usage
// starting at the median (record_first); if there is no room, the event is
// not counted. Returns false if the name was not there and not added.
// Runs at commit too (pending events): it raises no error.
bool apply(const char* name, dlock::LeaseEvent event, Micros time,
           bool may_add) {
  StatsKey key = key_of(MyDatabaseId, name);
  LWLockAcquire(shared->lock, LW_SHARED);
  if (StatsEntry* e = find(key)) {
    SpinLockAcquire(&e->mutex);
    dlock::record(e->counters, event, time);
    SpinLockRelease(&e->mutex);
    LWLockRelease(shared->lock);
    return true;
  }
  LWLockRelease(shared->lock);
  if (!may_add) return false;
  LWLockAcquire(shared->lock, LW_EXCLUSIVE);
  // Another backend may have added it between the two locks.
  if (StatsEntry* e = find(key)) {
    dlock::record(e->counters, event, time);
  } else if (add(key_of(MyDatabaseId, ""), shared->started_at) != nullptr) {
    if (StatsEntry* added = add(key, GetCurrentTimestamp())) {
      dlock::record_first(added->counters, event, time, shared->median_usage);
    }
  }
  LWLockRelease(shared->lock);
  return true;
}

// Whether `name` has a lease or holder row this transaction sees: a grant
// of it committed (or is this transaction's own).
bool has_lease_row(const char* name) {
  return read_lease(name).has_value() ||
         read_holders(name, Seen::snapshot).count > 0;
}

// Events that end or start a grant, queued until their transaction's
// outcome is known: counted when it commits (or is prepared), forgotten
// when it, or the subtransaction that queued them, aborts. So a name gets
// an entry only for a grant that committed, and a lapse is counted once
// per grant even when the takeover that found it is rolled back and
// retried. Kept in TopTransactionContext: plain data.
struct PendingEvent {
  char name[dlock::kMaxNameBytes + 1];
  dlock::LeaseEvent event;
  Micros time;
  SubTransactionId subxact;
};
DLOCK_PLAIN_STRUCT(PendingEvent);

PendingEvent* pending = nullptr;
int pending_count = 0;
int pending_room = 0;
bool callbacks_registered = false;

void forget_pending() {
  pending = nullptr;  // TopTransactionContext frees it
  pending_count = 0;
  pending_room = 0;
}

extern "C" {
static void on_stats_xact(XactEvent event, void*) {
  // The array goes with TopTransactionContext at every transaction's end,
  // empty or not (a subtransaction's abort may have emptied it).
  if (pending == nullptr) return;
  if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE) {
    for (int i = 0; i < pending_count; ++i) {
      apply(pending[i].name, pending[i].event, pending[i].time, true);
    }
    forget_pending();
  } else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
             event == XACT_EVENT_PARALLEL_COMMIT) {
    forget_pending();
  }
}

static void on_stats_subxact(SubXactEvent event, SubTransactionId subxact,
                             SubTransactionId parent, void*) {
  if (event == SUBXACT_EVENT_COMMIT_SUB) {
    for (int i = 0; i < pending_count; ++i) {
      if (pending[i].subxact == subxact) pending[i].subxact = parent;
    }
  } else if (event == SUBXACT_EVENT_ABORT_SUB) {
    int kept = 0;
    for (int i = 0; i < pending_count; ++i) {
      if (pending[i].subxact != subxact) pending[kept++] = pending[i];
    }
    pending_count = kept;
  }
}
}  // extern "C"

void queue_event(const char* name, dlock::LeaseEvent event, Micros time) {
  if (!callbacks_registered) {
    RegisterXactCallback(on_stats_xact, nullptr);
    RegisterSubXactCallback(on_stats_subxact, nullptr);
    callbacks_registered = true;
  }
  if (pending_count == pending_room) {
    int room = pending_room == 0 ? 16 : pending_room * 2;
    pending = static_cast<PendingEvent*>(
        pending == nullptr ? MemoryContextAlloc(TopTransactionContext,
                                                sizeof(PendingEvent) * room)
                           : repalloc(pending, sizeof(PendingEvent) * room));
    pending_room = room;
  }
  PendingEvent& p = pending[pending_count++];
  strlcpy(p.name, name, sizeof(p.name));
  p.event = event;
  p.time = time;
  p.subxact = GetCurrentSubTransactionId();
}

dlock::LeaseCounters counters_of(StatsEntry* e) {
  SpinLockAcquire(&e->mutex);
  dlock::LeaseCounters c = e->counters;
  SpinLockRelease(&e->mutex);
  return c;
}

double ms(Micros us) { return static_cast<double>(us) / 1000.0; }

// The counters as the views show them: 12 columns from values[0]; since
// 0.9.0, lapses is the functions' last column (lapse_column()).
void counter_values(const dlock::LeaseCounters& c, Datum* values) {
  values[0] = Int64GetDatum(c.grants);
  values[1] = Int64GetDatum(c.busy);
  values[2] = Int64GetDatum(c.waits);
  values[3] = Int64GetDatum(c.wait_timeouts);
  values[4] = Float8GetDatum(ms(c.total_wait));
  values[5] = Float8GetDatum(ms(c.max_wait));
  values[6] = Int64GetDatum(c.takeovers);
  values[7] = Int64GetDatum(c.force_releases);
  values[8] = Int64GetDatum(c.renew_failures);
  values[9] = Int64GetDatum(c.releases);
  values[10] = Float8GetDatum(ms(c.total_hold));
  values[11] = Float8GetDatum(ms(c.max_hold));
}
constexpr int kCounterColumns = 12;

// 0.9.0 appended lapses to the functions' columns. The library serves
// 0.8.0's SQL objects too, until ALTER EXTENSION dlock UPDATE: their
// functions' tuple descriptor (the caller's, InitMaterializedSRF) lacks the
// last column, and tuplestore_putvalues() reads only as many values as it
// has columns.

}  // namespace

void request_stats_memory() {
  previous_request = shmem_request_hook;
  shmem_request_hook = request_memory;
  previous_startup = shmem_startup_hook;
  shmem_startup_hook = attach_memory;
}

void count_event(const char* name, dlock::LeaseEvent event, Micros time) {
  if (shared == nullptr || !track_stats) return;
  switch (dlock::when_counted(event)) {
    case dlock::Counted::at_commit:
      queue_event(name, event, time);
      return;
    case dlock::Counted::now:
      (void)apply(name, event, time, true);
      return;
    case dlock::Counted::now_if_real:
      if (!apply(name, event, time, false) && has_lease_row(name)) {
        (void)apply(name, event, time, true);
      }
      return;
  }
}

}  // namespace dlock::pg

using dlock::pg::shared;
using dlock::pg::StatsEntry;

// dlock.stats_status() RETURNS text: 'on', or why nothing is counted.
DLOCK_FUNCTION(dlock_stats_status) {
  const char* status =
      shared == nullptr ? "off: dlock is not in shared_preload_libraries"
      : !dlock::pg::track_stats ? "off: dlock.track_stats is off"
                                : "on";
  PG_RETURN_TEXT_P(cstring_to_text(status));
}

// dlock.lease_stats() RETURNS SETOF record: a row per name of this
// database counted (name, the counters, stats_since, and since 0.9.0
// lapses); none when dlock is not preloaded.
DLOCK_FUNCTION(dlock_lease_stats) {
  InitMaterializedSRF(fcinfo, 0);
  if (shared == nullptr) return static_cast<Datum>(0);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  LWLockAcquire(shared->lock, LW_SHARED);
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, dlock::pg::entries);
  while (auto* e = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
    if (e->key.dbid != MyDatabaseId || dlock::pg::is_database_entry(e)) {
      continue;
    }
    Datum values[dlock::pg::kCounterColumns + 3];
    bool nulls[dlock::pg::kCounterColumns + 3] = {false};
    dlock::LeaseCounters c = dlock::pg::counters_of(e);
    values[0] = CStringGetTextDatum(e->key.name);
    dlock::pg::counter_values(c, values + 1);
    values[dlock::pg::kCounterColumns + 1] = TimestampTzGetDatum(e->since);
    values[dlock::pg::kCounterColumns + 2] = Int64GetDatum(c.lapses);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  }
  LWLockRelease(shared->lock);
  return static_cast<Datum>(0);
}

// dlock.lease_stats_totals() RETURNS SETOF record: one row for this
// database (the counters over its names, evicted ones included; names,
// max_names, evictions, stats_reset, and since 0.9.0 lapses), none when
// dlock is not preloaded.
DLOCK_FUNCTION(dlock_lease_stats_totals) {
  InitMaterializedSRF(fcinfo, 0);
  if (shared == nullptr) return static_cast<Datum>(0);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  constexpr int n = dlock::pg::kCounterColumns + 4;
  Datum values[n + 1];
  bool nulls[n + 1] = {false};
  dlock::LeaseCounters total;
  int32 names = 0;
  int64 evictions = 0;
  TimestampTz reset = shared->started_at;
  LWLockAcquire(shared->lock, LW_SHARED);
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, dlock::pg::entries);
  while (auto* e = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
    if (e->key.dbid != MyDatabaseId) continue;
    dlock::merge(total, dlock::pg::counters_of(e));
    if (dlock::pg::is_database_entry(e)) {
      evictions = e->evictions;
      reset = e->since;
    } else {
      ++names;
    }
  }
  LWLockRelease(shared->lock);
  dlock::pg::counter_values(total, values);
  values[n - 4] = Int32GetDatum(names);
  values[n - 3] = Int32GetDatum(dlock::pg::stats_max);
  values[n - 2] = Int64GetDatum(evictions);
  values[n - 1] = TimestampTzGetDatum(reset);
  values[n] = Int64GetDatum(total.lapses);  // 0.9.0's last column
  tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  return static_cast<Datum>(0);
}

// dlock.stats_reset() RETURNS void: forgets the counters of this
// database's names and its totals. Nothing to do when dlock is not
// preloaded.
DLOCK_FUNCTION(dlock_stats_reset) {
  if (shared == nullptr) PG_RETURN_VOID();
  TimestampTz now = GetCurrentTimestamp();
  LWLockAcquire(shared->lock, LW_EXCLUSIVE);
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, dlock::pg::entries);
  while (auto* e = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
    if (e->key.dbid == MyDatabaseId && !dlock::pg::is_database_entry(e)) {
      (void)hash_search(dlock::pg::entries, &e->key, HASH_REMOVE, nullptr);
    }
  }
  StatsEntry* database =
      dlock::pg::add(dlock::pg::key_of(MyDatabaseId, ""), now);
  if (database != nullptr) {
    database->counters = dlock::LeaseCounters{};
    database->evictions = 0;
    database->since = now;
  }
  LWLockRelease(shared->lock);
  PG_RETURN_VOID();
}
