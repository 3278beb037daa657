#include "stats.h"

#include "boundary.h"
#include "settings.h"

namespace dlock::pg {

namespace {

constexpr const char* kStatsTranche = "dlock_stats";

// One name's counters; the name is the hash key.
struct StatsEntry {
  char name[dlock::kMaxNameBytes + 1];
  slock_t mutex;  // guards counters
  dlock::LeaseCounters counters;
  TimestampTz since;  // counted since (first event after a reset or eviction)
};
DLOCK_PLAIN_STRUCT(StatsEntry);

struct StatsShared {
  LWLock* lock;  // shared: counting and reading; exclusive: adding names
  dlock::LeaseCounters evicted;  // names that gave way (under lock, exclusive)
  int64 evictions;
  TimestampTz reset_at;
};
DLOCK_PLAIN_STRUCT(StatsShared);

StatsShared* shared = nullptr;
HTAB* names = nullptr;
shmem_request_hook_type previous_request = nullptr;
shmem_startup_hook_type previous_startup = nullptr;

Size stats_memory_size() {
  return add_size(MAXALIGN(sizeof(StatsShared)),
                  hash_estimate_size(stats_max, sizeof(StatsEntry)));
}

void request_memory() {
  if (previous_request) previous_request();
  RequestAddinShmemSpace(stats_memory_size());
  RequestNamedLWLockTranche(kStatsTranche, 1);
}

void attach_memory() {
  if (previous_startup) previous_startup();
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  bool found;
  shared = static_cast<StatsShared*>(
      ShmemInitStruct("dlock stats", sizeof(StatsShared), &found));
  if (!found) {
    shared->lock = &GetNamedLWLockTranche(kStatsTranche)->lock;
    shared->evicted = dlock::LeaseCounters{};
    shared->evictions = 0;
    shared->reset_at = GetCurrentTimestamp();
  }
  HASHCTL info;
  info.keysize = sizeof(StatsEntry::name);
  info.entrysize = sizeof(StatsEntry);
  names = ShmemInitHash("dlock stats names", stats_max, stats_max, &info,
                        HASH_ELEM | HASH_STRINGS);
  LWLockRelease(AddinShmemInitLock);
}

bool by_usage(const StatsEntry* a, const StatsEntry* b) {
  return a->counters.usage < b->counters.usage;
}

// Makes room for a name: ages every name's usage and removes the least
// used, keeping their counters in the totals. Lock held exclusive.
void evict() {
  long n = hash_get_num_entries(names);
  auto** all = static_cast<StatsEntry**>(palloc(sizeof(StatsEntry*) * n));
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, names);
  long i = 0;
  while (auto* e = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
    e->counters.usage *= dlock::kUsageDecay;
    all[i++] = e;
  }
  std::size_t gone = std::min<std::size_t>(dlock::names_to_evict(i), i);
  std::partial_sort(all, all + gone, all + i, by_usage);
  for (std::size_t k = 0; k < gone; ++k) {
    dlock::merge(shared->evicted, all[k]->counters);
    (void)hash_search(names, all[k]->name, HASH_REMOVE, nullptr);
  }
  shared->evictions += static_cast<int64>(gone);
  pfree(all);
}

// The entry of `name`, added if new (evicting others when full). Returns
// with the lock held shared; NULL (lock not held) if there is no room.
StatsEntry* entry_of(const char* name) {
  LWLockAcquire(shared->lock, LW_SHARED);
  auto* e =
      static_cast<StatsEntry*>(hash_search(names, name, HASH_FIND, nullptr));
  if (e != nullptr) return e;
  LWLockRelease(shared->lock);
  LWLockAcquire(shared->lock, LW_EXCLUSIVE);
  e = static_cast<StatsEntry*>(hash_search(names, name, HASH_FIND, nullptr));
  if (e == nullptr) {
    if (hash_get_num_entries(names) >= stats_max) evict();
    bool found;
    e = static_cast<StatsEntry*>(
        hash_search(names, name, HASH_ENTER_NULL, &found));
    if (e != nullptr && !found) {
      SpinLockInit(&e->mutex);
      e->counters = dlock::LeaseCounters{};
      e->since = GetCurrentTimestamp();
    }
  }
  // Counting needs the lock shared only; a reset or an eviction may come
  // between, and then this event counts for a name that is new again.
  LWLockRelease(shared->lock);
  if (e == nullptr) return nullptr;
  return entry_of(name);
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

// dlock.stats_status() RETURNS text: 'on', or why nothing is counted.
DLOCK_FUNCTION(dlock_stats_status) {
  const char* status =
      shared == nullptr ? "off: dlock is not in shared_preload_libraries"
      : !dlock::pg::track_stats ? "off: dlock.track_stats is off"
                                : "on";
  PG_RETURN_TEXT_P(cstring_to_text(status));
}

// dlock.lease_stats() RETURNS SETOF record: a row per name counted
// (name, the counters, stats_since); none when statistics are off.
DLOCK_FUNCTION(dlock_lease_stats) {
  InitMaterializedSRF(fcinfo, 0);
  if (shared == nullptr) return static_cast<Datum>(0);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  LWLockAcquire(shared->lock, LW_SHARED);
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, dlock::pg::names);
  while (auto* e =
             static_cast<dlock::pg::StatsEntry*>(hash_seq_search(&scan))) {
    Datum values[dlock::pg::kCounterColumns + 2];
    bool nulls[dlock::pg::kCounterColumns + 2] = {false};
    values[0] = CStringGetTextDatum(e->name);
    dlock::pg::counter_values(dlock::pg::counters_of(e), values + 1);
    values[dlock::pg::kCounterColumns + 1] = TimestampTzGetDatum(e->since);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  }
  LWLockRelease(shared->lock);
  return static_cast<Datum>(0);
}

// dlock.lease_stats_totals() RETURNS SETOF record: one row (the counters
// over every name, evicted ones included; names, max_names, evictions,
// stats_reset), none when statistics are off.
DLOCK_FUNCTION(dlock_lease_stats_totals) {
  InitMaterializedSRF(fcinfo, 0);
  if (shared == nullptr) return static_cast<Datum>(0);
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  constexpr int n = dlock::pg::kCounterColumns + 4;
  Datum values[n];
  bool nulls[n] = {false};
  LWLockAcquire(shared->lock, LW_SHARED);
  dlock::LeaseCounters total = shared->evicted;
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, dlock::pg::names);
  while (auto* e =
             static_cast<dlock::pg::StatsEntry*>(hash_seq_search(&scan))) {
    dlock::merge(total, dlock::pg::counters_of(e));
  }
  dlock::pg::counter_values(total, values);
  values[n - 4] =
      Int32GetDatum(static_cast<int32>(hash_get_num_entries(dlock::pg::names)));
  values[n - 3] = Int32GetDatum(dlock::pg::stats_max);
  values[n - 2] = Int64GetDatum(shared->evictions);
  values[n - 1] = TimestampTzGetDatum(shared->reset_at);
  LWLockRelease(shared->lock);
  tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  return static_cast<Datum>(0);
}

// dlock.stats_reset() RETURNS void: forgets every name's counters and the
// totals. Nothing to do when statistics are off.
DLOCK_FUNCTION(dlock_stats_reset) {
  if (shared == nullptr) PG_RETURN_VOID();
  LWLockAcquire(shared->lock, LW_EXCLUSIVE);
  HASH_SEQ_STATUS scan;
  hash_seq_init(&scan, dlock::pg::names);
  while (auto* e =
             static_cast<dlock::pg::StatsEntry*>(hash_seq_search(&scan))) {
    (void)hash_search(dlock::pg::names, e->name, HASH_REMOVE, nullptr);
  }
  shared->evicted = dlock::LeaseCounters{};
  shared->evictions = 0;
  shared->reset_at = GetCurrentTimestamp();
  LWLockRelease(shared->lock);
  PG_RETURN_VOID();
}
