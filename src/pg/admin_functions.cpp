// SQL-callable administration: force_release, release_all and sweep.

#include "args.h"
#include "authorization.h"
#include "boundary.h"
#include "gate.h"
#include "intervals.h"
#include "lease_ended.h"
#include "lease_queue.h"
#include "lease_row.h"
#include "lease_value.h"
#include "relations.h"
#include "release.h"
#include "settings.h"
#include "spi.h"

namespace dlock::pg {
namespace {

// Ends the grant, whoever holds it, recording who and why; a lease
// released inside its min_hold is freed at once too (an administrator's
// override of the grant's terms). After the lease's columns, whether the
// grant had not been released (its holder is told: see lease_ended.h).
SavedPlan force_release = {
    "UPDATE dlock.lease_store AS s"
    "   SET released_at = coalesce(s.released_at, $2), min_hold = NULL,"
    "       forced_by = $3, force_reason = $4"
    "  FROM (SELECT released_at IS NULL AS unreleased FROM dlock.lease_store"
    "         WHERE name OPERATOR(pg_catalog.=) $1) AS before"
    " WHERE s.name OPERATOR(pg_catalog.=) $1"
    "   AND (s.released_at IS NULL"
    "        OR s.acquired_at OPERATOR(pg_catalog.+) s.min_hold"
    "           OPERATOR(pg_catalog.>) $2)"
    " RETURNING " DLOCK_LEASE_COLUMNS ", before.unreleased",
    4,
    {TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID},
    nullptr};

// An owner's lease rows; which of them it holds is src/core's to say.
SavedPlan rows_of_owner = {
    "SELECT " DLOCK_LEASE_COLUMNS
    " FROM dlock.lease_store"
    " WHERE owner OPERATOR(pg_catalog.=) $1 ORDER BY name",
    1,
    {TEXTOID},
    nullptr};

// Free since before $1: released before it, or expired past the lock-delay
// by then (see dlock.lease_state).
#define DLOCK_FREE_BEFORE_1                                               \
  "dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, $1,"      \
  "                  s.acquired_at OPERATOR(pg_catalog.+) s.min_hold)"    \
  " OPERATOR(pg_catalog.=) ANY ('{released,expired}'::pg_catalog.text[])" \
  " AND (s.released_at IS NULL"                                           \
  "      OR s.released_at OPERATOR(pg_catalog.<) $1)"

// Up to $2 names of leases free since before $1.
SavedPlan sweepable = {
    "SELECT name FROM dlock.lease_store AS s"
    " WHERE " DLOCK_FREE_BEFORE_1 " ORDER BY name LIMIT $2",
    2,
    {TIMESTAMPTZOID, INT4OID},
    nullptr};

// Deletes the lease $2 if it is still free since before $1.
SavedPlan sweep_delete = {
    "DELETE FROM dlock.lease_store AS s"
    " WHERE s.name OPERATOR(pg_catalog.=) $2 AND " DLOCK_FREE_BEFORE_1,
    2,
    {TIMESTAMPTZOID, TEXTOID},
    nullptr};

// Gates are held until commit: one sweep takes at most this many.
constexpr int kSweepBatch = 10000;

}  // namespace

// dlock.force_release(name text, reason text) RETURNS dlock.lease
DLOCK_FUNCTION(dlock_force_release) {
  const char* name = required_name(fcinfo, 0, "lease name");
  const char* reason = required_text(fcinfo, 1, "reason");
  dlock::check_reason(reason);
  PreventCommandIfReadOnly("dlock.force_release()");
  require_current_sql_objects();
  wait_gate(name);
  TimestampTz now = GetCurrentTimestamp();
  const char* by = GetUserNameFromId(GetUserId(), false);
  OwnerSpi spi = owner_spi_connect();
  Datum args[4] = {CStringGetTextDatum(name), TimestampTzGetDatum(now),
                   CStringGetTextDatum(by), CStringGetTextDatum(reason)};
  bool forced = run_plan(force_release, args, "    ") == 1;
  StoredLease ended;
  bool unreleased = false;
  if (forced) {
    ended = decode_lease(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
                         spi.caller_cxt);
    bool isnull;
    unreleased = DatumGetBool(result_value(0, kColumnCount + 1, &isnull));
  }
  owner_spi_finish(spi);
  if (!forced) PG_RETURN_NULL();
  wake_queue_head(name);
  // A grant its holder had released (inside its min_hold) ends no work.
  if (unreleased) notify_force_released(name, ended.token, reason);
  ereport(
      log_grants ? LOG : DEBUG1,
      (errmsg_internal(
          "dlock: lease \"%s\" of owner \"%s\" (token "
          "%lld) force-released by %s after %lld ms: %s",
          name, ended.owner, static_cast<long long>(ended.token), by,
          static_cast<long long>((now - ended.acquired_at) / 1000), reason)));
  return lease_value(fcinfo, name, ended.owner, ended.token, ended.acquired_at,
                     ended.expires_at);
}

// dlock.release_all(owner text) RETURNS integer: the leases owner holds
// that the caller may act for (see authorization.h).
DLOCK_FUNCTION(dlock_release_all) {
  const char* owner = required_text(fcinfo, 0, "owner");
  if (owner[0] == '\0') {
    throw_error(sqlstate::invalid_parameter_value, "owner must not be empty");
  }
  dlock::check_owner(owner);
  PreventCommandIfReadOnly("dlock.release_all()");
  require_current_sql_objects();
  OwnerSpi spi = owner_spi_connect();
  Datum args[1] = {CStringGetTextDatum(owner)};
  int n = static_cast<int>(run_plan(rows_of_owner, args, " "));
  // Decoded into the caller's memory: used after owner_spi_finish().
  StoredLease* rows =
      static_cast<StoredLease*>(palloc0(sizeof(StoredLease) * (n + 1)));
  for (int i = 0; i < n; ++i) {
    rows[i] = decode_lease(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
                           spi.caller_cxt);
  }
  owner_spi_finish(spi);
  // Held ones only, judged as the caller, outside the table owner's SPI.
  TimestampTz now = GetCurrentTimestamp();
  int released = 0;
  for (int i = 0; i < n; ++i) {
    if (!dlock::is_held(rules_row(rows[i]), now) ||
        !may_act_for(rows[i].acquired_by)) {
      continue;
    }
    const char* name = rows[i].name;
    wait_gate(name);
    if (release_gated(name, rows[i].token, read_lease(name))) {
      ++released;
      notify_released_all(name, rows[i].token);
    }
  }
  PG_RETURN_INT32(released);
}

// dlock.sweep(older_than interval) RETURNS bigint: deletes lease rows free
// for more than older_than. Rows being written right now (gate taken) are
// left for the next sweep.
DLOCK_FUNCTION(dlock_sweep) {
  Micros older_than =
      duration_of(IntervalPGetDatum(required_interval(fcinfo, 0, "older_than")),
                  "older_than");
  if (older_than < 0) {
    throw_error(sqlstate::invalid_parameter_value,
                "older_than must not be negative");
  }
  PreventCommandIfReadOnly("dlock.sweep()");
  require_current_sql_objects();
  TimestampTz before = GetCurrentTimestamp() - older_than;
  OwnerSpi spi = owner_spi_connect();
  Datum args[2] = {TimestampTzGetDatum(before), Int32GetDatum(kSweepBatch)};
  int n = static_cast<int>(run_plan(sweepable, args, "  "));
  char** names = static_cast<char**>(palloc0(sizeof(char*) * (n + 1)));
  for (int i = 0; i < n; ++i) {
    bool isnull;
    names[i] = TextDatumGetCString(result_value(i, 1, &isnull));
  }
  int64 deleted = 0;
  for (int i = 0; i < n; ++i) {
    LOCKTAG gate = gate_tag(names[i]);
    if (!try_gate(gate)) continue;
    Datum del[2] = {TimestampTzGetDatum(before), CStringGetTextDatum(names[i])};
    deleted += static_cast<int64>(run_plan(sweep_delete, del, "  "));
  }
  owner_spi_finish(spi);
  PG_RETURN_INT64(deleted);
}

}  // namespace dlock::pg
