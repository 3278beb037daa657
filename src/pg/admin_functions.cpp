// SQL-callable administration: force_release, release_all and sweep.

#include "../core/arguments.h"
#include "../core/deadline.h"
#include "../core/duration.h"
#include "../core/errors.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"
#include "../core/lease_stats.h"
#include "../core/sweep.h"

#include "args.h"
#include "authorization.h"
#include "boundary.h"
#include "gate.h"
#include "holder_rows.h"
#include "intervals.h"
#include "lease_ended.h"
#include "lease_queue.h"
#include "lease_row.h"
#include "lease_value.h"
#include "relations.h"
#include "release.h"
#include "settings.h"
#include "spi.h"
#include "stats.h"

namespace dlock::pg {
namespace {

// Ends the grants of name $1 (only the one with token $5, unless NULL),
// whoever holds them, recording who and why; a grant released inside its
// min_hold is freed at once too (an administrator's override of the
// grant's terms). After the grant's columns, whether it had not been
// released (its holder is told: see lease_ended.h).
#define DLOCK_FORCE_RELEASE(table, columns)                                   \
  "UPDATE " table                                                             \
  " AS s"                                                                     \
  "   SET released_at = coalesce(s.released_at, $2), min_hold = NULL,"        \
  "       forced_by = $3, force_reason = $4"                                  \
  "  FROM (SELECT token AS ended, released_at IS NULL AS unreleased"          \
  "          FROM " table                                                     \
  "         WHERE name OPERATOR(pg_catalog.=) $1) AS before"                  \
  " WHERE s.name OPERATOR(pg_catalog.=) $1"                                   \
  "   AND before.ended OPERATOR(pg_catalog.=) s.token"                        \
  "   AND ($5::pg_catalog.int8 IS NULL OR s.token OPERATOR(pg_catalog.=) $5)" \
  "   AND (s.released_at IS NULL"                                             \
  "        OR s.acquired_at OPERATOR(pg_catalog.+) s.min_hold"                \
  "           OPERATOR(pg_catalog.>) $2)"                                     \
  " RETURNING " columns ", before.unreleased"
SavedPlan force_release_lease = {
    DLOCK_FORCE_RELEASE("dlock.lease_store", DLOCK_LEASE_COLUMNS),
    5,
    {TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, INT8OID},
    nullptr};
SavedPlan force_release_holders = {
    DLOCK_FORCE_RELEASE("dlock.lease_holders", DLOCK_HOLDER_COLUMNS),
    5,
    {TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, INT8OID},
    nullptr};

// An owner's lease rows and holder rows; which of them it holds is
// src/core's to say.
SavedPlan leases_of_owner = {
    "SELECT " DLOCK_LEASE_COLUMNS
    " FROM dlock.lease_store"
    " WHERE owner OPERATOR(pg_catalog.=) $1 ORDER BY name",
    1,
    {TEXTOID},
    nullptr};
SavedPlan holders_of_owner = {
    "SELECT " DLOCK_HOLDER_COLUMNS
    " FROM dlock.lease_holders"
    " WHERE owner OPERATOR(pg_catalog.=) $1 ORDER BY name, token",
    1,
    {TEXTOID},
    nullptr};

// What dlock.sweep deletes: the row `s` (a lease or holder row) has been
// free since before the cutoff $1: released before it, or expired past
// the lock-delay by then (see dlock.lease_state).
#define DLOCK_SWEEPABLE_ROW                                               \
  "dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, $1,"      \
  "                  s.acquired_at OPERATOR(pg_catalog.+) s.min_hold)"    \
  " OPERATOR(pg_catalog.=) ANY ('{released,expired}'::pg_catalog.text[])" \
  " AND (s.released_at IS NULL"                                           \
  "      OR s.released_at OPERATOR(pg_catalog.<) $1)"

// Up to $2 names with a lease or holder row free since before $1.
SavedPlan sweepable = {
    "SELECT name FROM dlock.lease_store AS s WHERE " DLOCK_SWEEPABLE_ROW
    " UNION "
    "SELECT name FROM dlock.lease_holders AS s WHERE " DLOCK_SWEEPABLE_ROW
    " ORDER BY name LIMIT $2",
    2,
    {TIMESTAMPTZOID, INT4OID},
    nullptr};

// Deletes the rows of lease $2 still free since before $1; for each,
// whether it expired unreleased (a lapse).
SavedPlan sweep_lease = {
    "DELETE FROM dlock.lease_store AS s"
    " WHERE s.name OPERATOR(pg_catalog.=) $2 AND " DLOCK_SWEEPABLE_ROW
    " RETURNING s.released_at IS NULL",
    2,
    {TIMESTAMPTZOID, TEXTOID},
    nullptr};
SavedPlan sweep_holders = {
    "DELETE FROM dlock.lease_holders AS s"
    " WHERE s.name OPERATOR(pg_catalog.=) $2 AND " DLOCK_SWEEPABLE_ROW
    " RETURNING s.released_at IS NULL",
    2,
    {TIMESTAMPTZOID, TEXTOID},
    nullptr};

// The rows the last sweep plan deleted that had lapsed: counted.
void count_swept_lapses(const char* name, uint64 deleted) {
  for (uint64 row = 0; row < deleted; ++row) {
    bool isnull;
    Datum unreleased = result_value(row, 1, &isnull);
    if (!isnull && DatumGetBool(unreleased)) {
      count_event(name, dlock::LeaseEvent::lapse);
    }
  }
}

// Runs a plan that returns lease rows (DLOCK_LEASE_COLUMNS, or
// DLOCK_HOLDER_COLUMNS if `holders`), as the table owner; the rows,
// decoded into the caller's memory (used after owner_spi_finish()). With
// `flags`, each row's boolean column after those, too.
int decoded_rows(SavedPlan& plan, const Datum* args, const char* nulls,
                 bool holders, LeaseRow** rows, bool** flags) {
  OwnerSpi spi = owner_spi_connect();
  int n = static_cast<int>(run_plan(plan, args, nulls));
  *rows = static_cast<LeaseRow*>(
      MemoryContextAllocZero(spi.caller_cxt, sizeof(LeaseRow) * (n + 1)));
  if (flags != nullptr) {
    *flags = static_cast<bool*>(
        MemoryContextAllocZero(spi.caller_cxt, sizeof(bool) * (n + 1)));
  }
  int flag_column = (holders ? kColHolderPermits : kColumnCount) + 1;
  for (int i = 0; i < n; ++i) {
    HeapTuple tuple = SPI_tuptable->vals[i];
    TupleDesc desc = SPI_tuptable->tupdesc;
    (*rows)[i] = holders ? decode_holder(tuple, desc, spi.caller_cxt)
                         : decode_lease(tuple, desc, spi.caller_cxt);
    if (flags != nullptr) {
      bool isnull;
      (*flags)[i] = DatumGetBool(result_value(i, flag_column, &isnull));
    }
  }
  owner_spi_finish(spi);
  return n;
}

}  // namespace

// dlock.force_release(name text, reason text, token bigint) RETURNS
// dlock.lease: every grant of the name, or the one with token.
DLOCK_FUNCTION(dlock_force_release) {
  const char* name = required_name(fcinfo, 0, "lease name");
  const char* reason = required_text(fcinfo, 1, "reason");
  dlock::check_reason(reason);
  bool any_token = PG_NARGS() < 3 || PG_ARGISNULL(2);
  int64 token = any_token ? 0 : PG_GETARG_INT64(2);
  PreventCommandIfReadOnly("dlock.force_release()");
  require_current_sql_objects();
  wait_gate(name);
  TimestampTz now = GetCurrentTimestamp();
  const char* by = GetUserNameFromId(GetUserId(), false);
  Datum args[5] = {CStringGetTextDatum(name), TimestampTzGetDatum(now),
                   CStringGetTextDatum(by), CStringGetTextDatum(reason),
                   Int64GetDatum(token)};
  const char* nulls = any_token ? "    n" : "     ";
  LeaseRow* leases;
  LeaseRow* holders;
  bool* lease_unreleased;
  bool* holder_unreleased;
  int n_leases = decoded_rows(force_release_lease, args, nulls, false, &leases,
                              &lease_unreleased);
  int n_holders = decoded_rows(force_release_holders, args, nulls, true,
                               &holders, &holder_unreleased);
  if (n_leases + n_holders == 0) PG_RETURN_NULL();
  wake_queue_head(name);
  // The grant returned: the exclusive one, else the latest holder's.
  const LeaseRow* shown = nullptr;
  for (int i = 0; i < n_leases + n_holders; ++i) {
    bool is_lease = i < n_leases;
    const LeaseRow& ended = is_lease ? leases[i] : holders[i - n_leases];
    // A grant its holder had released (inside its min_hold) ends no work.
    bool unreleased =
        is_lease ? lease_unreleased[i] : holder_unreleased[i - n_leases];
    if (unreleased) {
      notify_force_released(name, ended.token, reason);
      count_event(name, dlock::LeaseEvent::force_release,
                  dlock::hold_time(ended.acquired_at, ended.expires_at, now));
      // Expired before anyone released it: a lapse too.
      if (ended.expires_at <= now) {
        count_event(name, dlock::LeaseEvent::lapse);
      }
    }
    ereport(
        log_grants ? LOG : DEBUG1,
        (errmsg_internal(
            "dlock: lease \"%s\" of owner \"%s\" (token "
            "%lld) force-released by %s after %lld ms: %s",
            name, ended.owner, static_cast<long long>(ended.token), by,
            static_cast<long long>((now - ended.acquired_at) / 1000), reason)));
    if (shown == nullptr ||
        (shown->in_holders && ended.in_holders && ended.token > shown->token)) {
      shown = &ended;
    }
  }
  return lease_value(fcinfo, name, shown->owner, shown->token,
                     shown->acquired_at, shown->expires_at);
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
  Datum args[1] = {CStringGetTextDatum(owner)};
  LeaseRow* leases;
  LeaseRow* holders;
  int n_leases =
      decoded_rows(leases_of_owner, args, " ", false, &leases, nullptr);
  int n_holders =
      decoded_rows(holders_of_owner, args, " ", true, &holders, nullptr);
  int n = n_leases + n_holders;
  // Held ones only, judged as the caller, outside the table owner's SPI.
  TimestampTz now = GetCurrentTimestamp();
  int released = 0;
  for (int i = 0; i < n; ++i) {
    const LeaseRow& row = i < n_leases ? leases[i] : holders[i - n_leases];
    if (!dlock::is_held(grant_of(row), now) || !may_act_for(row.acquired_by)) {
      continue;
    }
    wait_gate(row.name);
    if (release_gated(row.name, row.token, read_grant(row.name, row.token))) {
      ++released;
      notify_released_all(row.name, row.token);
    }
  }
  PG_RETURN_INT32(released);
}

// dlock.sweep(older_than interval) RETURNS bigint: deletes lease rows free
// for more than older_than, of at most sweep_batch() names (each name's
// gate is held until commit: a tenth of the shared lock table); the
// caller calls again until it returns 0. Rows being written right now
// (gate taken) are left for the next sweep.
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
  int batch = dlock::sweep_batch(max_locks_per_xact, MaxConnections,
                                 max_prepared_xacts);
  Datum args[2] = {TimestampTzGetDatum(before), Int32GetDatum(batch)};
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
    uint64 leases = run_plan(sweep_lease, del, "  ");
    count_swept_lapses(names[i], leases);
    uint64 holders = run_plan(sweep_holders, del, "  ");
    count_swept_lapses(names[i], holders);
    deleted += static_cast<int64>(leases + holders);
  }
  owner_spi_finish(spi);
  PG_RETURN_INT64(deleted);
}

}  // namespace dlock::pg
