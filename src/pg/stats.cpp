#include <algorithm>
#include <cstddef>

#include "../core/arguments.h"
#include "../core/duration.h"
#include "../core/lease_stats.h"

#include "stats.h"
#include "boundary.h"
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
// whatever their database, keeping their counts in their database's entry.
// Lock held exclusive.
void evict() {
  long n = hash_get_num_entries(entries);
  auto** all = static_cast<StatsEntry**>(palloc(sizeof(StatsEntry*) * n));
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

// The entry of `name` in this database, added if new (with the database's
// own entry first). Returns with the lock held shared; NULL (lock not
// held) if there is no room.
StatsEntry* entry_of(const char* name) {
  StatsKey key = key_of(MyDatabaseId, name);
  for (;;) {
    LWLockAcquire(shared->lock, LW_SHARED);
    if (StatsEntry* e = find(key)) return e;
    LWLockRelease(shared->lock);
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    bool added = add(key_of(MyDatabaseId, ""), shared->started_at) != nullptr &&
                 add(key, GetCurrentTimestamp()) != nullptr;
    // Counting needs the lock shared only; a reset or an eviction may come
    // between, and then the name is added again.
    LWLockRelease(shared->lock);
    if (!added) return nullptr;
  }
}

dlock::LeaseCounters counters_of(StatsEntry* e) {
  SpinLockAcquire(&e->mutex);
  dlock::LeaseCounters c = e->counters;
  SpinLockRelease(&e->mutex);
  return c;
}

double ms(Micros us) { return static_cast<double>(us) / 1000.0; }

// The counters as the views show them: 12 columns from values[0].
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

}  // namespace

void request_stats_memory() {
  previous_request = shmem_request_hook;
  shmem_request_hook = request_memory;
  previous_startup = shmem_startup_hook;
  shmem_startup_hook = attach_memory;
}

void count_event(const char* name, dlock::LeaseEvent event, Micros time) {
  if (shared == nullptr || !track_stats) return;
  StatsEntry* e = entry_of(name);
  if (e == nullptr) return;
  SpinLockAcquire(&e->mutex);
  dlock::record(e->counters, event, time);
  SpinLockRelease(&e->mutex);
  LWLockRelease(shared->lock);
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
// database counted (name, the counters, stats_since); none when dlock is
// not preloaded.
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
    Datum values[dlock::pg::kCounterColumns + 2];
    bool nulls[dlock::pg::kCounterColumns + 2] = {false};
    values[0] = CStringGetTextDatum(e->key.name);
    dlock::pg::counter_values(dlock::pg::counters_of(e), values + 1);
    values[dlock::pg::kCounterColumns + 1] = TimestampTzGetDatum(e->since);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  }
  LWLockRelease(shared->lock);
  return static_cast<Datum>(0);
}

// dlock.lease_stats_totals() RETURNS SETOF record: one row for this
// database (the counters over its names, evicted ones included; names,
// max_names, evictions, stats_reset), none when dlock is not preloaded.
DLOCK_FUNCTION(dlock_lease_stats_totals) {
  InitMaterializedSRF(fcinfo, 0);
  if (shared == nullptr) return static_cast<Datum>(0);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  constexpr int n = dlock::pg::kCounterColumns + 4;
  Datum values[n];
  bool nulls[n] = {false};
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
