#include <optional>

#include "../core/holders.h"
#include "../core/lease_rules.h"
#include "../core/tokens.h"

#include "lease_row.h"
#include "intervals.h"
#include "relations.h"
#include "spi.h"
#include "tokens.h"

namespace dlock::pg {

namespace {

// A name's first grant; nothing if another transaction created it since
// it was read.
SavedPlan insert_lease = {
    "INSERT INTO dlock.lease_store"
    "       (name, token, acquired_at, expires_at, ttl, acquired_by, owner,"
    "        lock_delay, max_hold, backend_pid, backend_start, min_hold)"
    " VALUES ($1, $7, $4, $5, $6, $3, $2, $8, $9, $10, $11, $12)"
    " ON CONFLICT (name) DO NOTHING",
    12,
    {TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID,
     INT8OID, INTERVALOID, INTERVALOID, INT4OID, TIMESTAMPTZOID, INTERVALOID},
    nullptr};

SavedPlan select_for_share = {"SELECT " DLOCK_LEASE_COLUMNS
                              " FROM dlock.lease_store"
                              " WHERE name OPERATOR(pg_catalog.=) $1 FOR SHARE",
                              1,
                              {TEXTOID},
                              nullptr};

// One column of a lease row to set.
struct ColumnValue {
  AttrNumber column;
  Datum value;
  bool isnull;
};
DLOCK_PLAIN_STRUCT(ColumnValue);

const char* text_or_null(HeapTuple tuple, AttrNumber column, TupleDesc desc) {
  bool isnull;
  Datum value = heap_getattr(tuple, column, desc, &isnull);
  return isnull ? nullptr : TextDatumGetCString(value);
}

// Index entries for a row version that is not heap-only, made by the
// executor's own routine, as for an UPDATE: indexes not yet ready (during
// CREATE INDEX CONCURRENTLY, or left behind by a failed one) are skipped,
// partial and expression indexes are evaluated, unique and exclusion
// constraints checked. After a heap-only update (PostgreSQL 16 and later),
// only the summarizing indexes (BRIN) need an entry: only_summarizing.
void insert_index_entries(Relation rel, HeapTuple tuple,
                          bool only_summarizing) {
  EState* estate = CreateExecutorState();
  ResultRelInfo* target = makeNode(ResultRelInfo);
  InitResultRelInfo(target, rel, 0, nullptr, 0);
  ExecOpenIndices(target, false);
  TupleTableSlot* slot =
      ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsHeapTuple);
  ExecStoreHeapTuple(tuple, slot, false);
  // update = true: the hint that lets btree delete the row's older
  // versions bottom-up (right for the primary key: a lease's name never
  // changes; only a hint for any other index).
  List* deferred =
      compat::insert_index_tuples(target, slot, estate, only_summarizing);
  if (deferred != NIL) {
    elog(ERROR,
         "dlock: deferrable constraints on dlock.lease_store are not "
         "supported");
  }
  ExecCloseIndices(target);
  ExecResetTupleTable(estate->es_tupleTable, false);
  FreeExecutorState(estate);
}

// The first row of a name, through SPI (a plain INSERT: it needs index
// entries anyway).
RowWrite insert_row(const char* name, const char* owner, Datum role,
                    const GrantTerms& terms, int64 token) {
  Datum args[12] = {
      CStringGetTextDatum(name),
      CStringGetTextDatum(owner),
      role,
      TimestampTzGetDatum(terms.now),
      TimestampTzGetDatum(terms.expires_at),
      IntervalPGetDatum(terms.ttl),
      Int64GetDatum(token),
      IntervalPGetDatum(terms.lock_delay),
      PointerGetDatum(terms.max_hold),
      Int32GetDatum(MyProcPid),
      TimestampTzGetDatum(MyStartTimestamp),
      PointerGetDatum(terms.min_hold),
  };
  char nulls[] = "            ";
  if (terms.max_hold == nullptr) nulls[8] = 'n';
  if (terms.min_hold == nullptr) nulls[11] = 'n';
  OwnerSpi spi = owner_spi_connect();
  uint64 created = run_plan(insert_lease, args, nulls);
  owner_spi_finish(spi);
  return created == 1 ? RowWrite::written : RowWrite::changed;
}

// What a heap_update() or heap_delete() of a row version that was read
// means for the caller.
RowWrite row_write(TM_Result result) {
  switch (result) {
    case TM_Ok:
      return RowWrite::written;
    case TM_Updated:
    case TM_Deleted:
      // As the executor's UPDATE does when the row it read has moved on.
      if (IsolationUsesXactSnapshot()) {
        ereport(ERROR,
                (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                 errmsg("could not serialize access due to concurrent %s",
                        result == TM_Updated ? "update" : "delete")));
      }
      return RowWrite::changed;
    default:
      elog(ERROR, "dlock: unexpected result %d writing a lease row",
           static_cast<int>(result));
  }
}

// The table a row was read from, opened for writing.
Relation open_table_of(const LeaseRow& row) {
  return table_open(dlock_relation(row.in_holders ? DlockRelation::lease_holders
                                                  : DlockRelation::lease_store),
                    RowExclusiveLock);
}

// Replaces the version of the lease row that was read by one
// with `columns` set, as an UPDATE would (heap-only when it can, so that
// a lease's many grants and releases need no index entries), without
// planning or running a statement. The caller holds the lease's gate, so
// no other dlock write of the row is in flight.
RowWrite update_row(const LeaseRow& row, const ColumnValue* columns,
                    int count) {
  Relation rel = open_table_of(row);
  TupleDesc desc = RelationGetDescr(rel);
  Datum* values = static_cast<Datum*>(palloc0(sizeof(Datum) * desc->natts));
  bool* nulls = static_cast<bool*>(palloc0(sizeof(bool) * desc->natts));
  bool* replace = static_cast<bool*>(palloc0(sizeof(bool) * desc->natts));
  for (int i = 0; i < count; ++i) {
    int at = columns[i].column - 1;
    values[at] = columns[i].value;
    nulls[at] = columns[i].isnull;
    replace[at] = true;
  }
  HeapTuple updated =
      heap_modify_tuple(row.tuple, desc, values, nulls, replace);
  TM_FailureData failure;
  LockTupleMode lock_mode;
  compat::IndexUpdate indexes;
  TM_Result result = compat::heap_update(rel, &row.tuple->t_self, updated,
                                         GetCurrentCommandId(true), &failure,
                                         &lock_mode, &indexes);
  if (result == TM_Ok && indexes != compat::IndexUpdate::kNone) {
    insert_index_entries(rel, updated,
                         indexes == compat::IndexUpdate::kSummarizing);
  }
  table_close(rel, NoLock);
  return row_write(result);
}

}  // namespace

LeaseRow decode_lease(HeapTuple tuple, TupleDesc desc, MemoryContext into) {
  MemoryContext old = MemoryContextSwitchTo(into);
  bool isnull;
  LeaseRow lease;
  lease.name = text_or_null(tuple, kColName, desc);
  lease.token = DatumGetInt64(heap_getattr(tuple, kColToken, desc, &isnull));
  lease.owner = text_or_null(tuple, kColOwner, desc);
  lease.acquired_at =
      DatumGetTimestampTz(heap_getattr(tuple, kColAcquiredAt, desc, &isnull));
  lease.expires_at =
      DatumGetTimestampTz(heap_getattr(tuple, kColExpiresAt, desc, &isnull));
  lease.ttl = DatumGetIntervalP(datumCopy(
      heap_getattr(tuple, kColTtl, desc, &isnull), false, sizeof(Interval)));
  (void)heap_getattr(tuple, kColReleasedAt, desc, &isnull);
  lease.released = !isnull;
  // A NULL renew_count is 0 (rows written before 0.6.0 have zeros).
  Datum renew_count = heap_getattr(tuple, kColRenewCount, desc, &isnull);
  lease.renew_count = isnull ? 0 : DatumGetInt64(renew_count);
  lease.lock_delay = duration_of(
      heap_getattr(tuple, kColLockDelay, desc, &isnull), "lock_delay");
  Datum max_hold = heap_getattr(tuple, kColMaxHold, desc, &isnull);
  lease.max_hold = isnull ? 0 : duration_of(max_hold, "max_hold");
  Datum min_hold = heap_getattr(tuple, kColMinHold, desc, &isnull);
  lease.min_hold = isnull ? 0 : duration_of(min_hold, "min_hold");
  lease.forced_by = text_or_null(tuple, kColForcedBy, desc);
  lease.force_reason = text_or_null(tuple, kColForceReason, desc);
  lease.acquired_by = text_or_null(tuple, kColAcquiredBy, desc);
  lease.in_holders = false;
  lease.shared = false;
  lease.permits = 1;
  lease.tuple = nullptr;
  MemoryContextSwitchTo(old);
  return lease;
}

LeaseRow decode_holder(HeapTuple tuple, TupleDesc desc, MemoryContext into) {
  LeaseRow holder = decode_lease(tuple, desc, into);
  bool isnull;
  holder.in_holders = true;
  holder.shared =
      DatumGetBool(heap_getattr(tuple, kColHolderShared, desc, &isnull));
  holder.permits =
      DatumGetInt32(heap_getattr(tuple, kColHolderPermits, desc, &isnull));
  return holder;
}

LeaseGrant grant_of(const LeaseRow& row) {
  LeaseGrant grant;
  grant.token = row.token;
  grant.expires_at = row.expires_at;
  grant.released = row.released;
  grant.lock_delay = row.lock_delay;
  grant.min_hold_until = row.min_hold > 0 ? row.acquired_at + row.min_hold : 0;
  return grant;
}

dlock::Holder holder_of(const LeaseRow& row) {
  dlock::Holder holder;
  holder.grant = grant_of(row);
  holder.mode =
      row.shared ? dlock::HolderMode::shared : dlock::HolderMode::exclusive;
  holder.permits = row.permits;
  return holder;
}

bool lease_store_is_current(TupleDesc desc) {
  return desc->natts >= kColumnCount &&
         !TupleDescAttr(desc, kColRenewCount - 1)->attnotnull;
}

bool same_version(const std::optional<LeaseRow>& a,
                  const std::optional<LeaseRow>& b) {
  if (!a || !b) return !a && !b;
  return ItemPointerEquals(&a->tuple->t_self, &b->tuple->t_self);
}

void raise_serialization_failure() {
  ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                  errmsg("could not serialize access due to concurrent update"),
                  errdetail("The lease was written after the transaction's "
                            "snapshot.")));
  pg_unreachable();
}

LeaseRows read_rows(LeaseTable table, const char* name, int64 token,
                    Seen seen) {
  bool holders = table == LeaseTable::holders;
  Oid relid = dlock_relation(holders ? DlockRelation::lease_holders
                                     : DlockRelation::lease_store);
  Oid pkey = dlock_relation(holders ? DlockRelation::lease_holders_pkey
                                    : DlockRelation::lease_store_pkey);
  // See this transaction's own earlier writes, as an SPI query would.
  CommandCounterIncrement();
  Snapshot snapshot = RegisterSnapshot(
      seen == Seen::latest ? GetLatestSnapshot() : GetTransactionSnapshot());
  Relation rel = table_open(relid, AccessShareLock);
  TupleDesc desc = RelationGetDescr(rel);
  if (!holders && !lease_store_is_current(desc)) raise_sql_objects_outdated();

  ScanKeyData keys[2];
  ScanKeyInit(&keys[0], kColName, BTEqualStrategyNumber, F_TEXTEQ,
              CStringGetTextDatum(name));
  keys[0].sk_collation = TupleDescAttr(desc, kColName - 1)->attcollation;
  ScanKeyInit(&keys[1], kColToken, BTEqualStrategyNumber, F_INT8EQ,
              Int64GetDatum(token));
  SysScanDesc scan =
      systable_beginscan(rel, pkey, true, snapshot, token != 0 ? 2 : 1, keys);
  LeaseRows found{nullptr, 0};
  int room = 0;
  for (HeapTuple tuple; HeapTupleIsValid(tuple = systable_getnext(scan));) {
    if (found.count == room) {
      room = room == 0 ? 4 : room * 2;
      size_t bytes = sizeof(LeaseRow) * room;
      found.rows = static_cast<LeaseRow*>(
          found.rows == nullptr ? palloc(bytes) : repalloc(found.rows, bytes));
    }
    LeaseRow& row = found.rows[found.count++];
    row = holders ? decode_holder(tuple, desc, CurrentMemoryContext)
                  : decode_lease(tuple, desc, CurrentMemoryContext);
    row.tuple = heap_copytuple(tuple);
  }
  systable_endscan(scan);
  table_close(rel, NoLock);  // held to the end of the transaction
  UnregisterSnapshot(snapshot);
  return found;
}

std::optional<LeaseRow> read_lease(const char* name, Seen seen) {
  LeaseRows rows = read_rows(LeaseTable::store, name, 0, seen);
  if (rows.count == 0) return std::nullopt;
  return rows.rows[0];
}

std::optional<LeaseRow> read_lease_for_share(const char* name) {
  OwnerSpi spi = owner_spi_connect();
  Datum args[1] = {CStringGetTextDatum(name)};
  std::optional<LeaseRow> row;
  if (run_plan(select_for_share, args, " ") == 1) {
    row = decode_lease(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
                       spi.caller_cxt);
  }
  owner_spi_finish(spi);
  return row;
}

RowWrite write_grant(Grant kind, const char* name, const LeaseRow* row,
                     const char* owner, const GrantTerms& terms, int64* token) {
  if (kind == Grant::same_token) {
    // The same grant for longer: its token and other terms stay.
    *token = row->token;
    ColumnValue columns[] = {
        {kColExpiresAt, TimestampTzGetDatum(terms.expires_at), false},
        {kColTtl, IntervalPGetDatum(terms.ttl), false},
    };
    return update_row(*row, columns, lengthof(columns));
  }
  // The new token is drawn here, with the lease's gate held.
  *token = next_token();
  dlock::check_token_grows(*token, row ? row->token : 0);
  Datum role = CStringGetTextDatum(GetUserNameFromId(GetUserId(), false));
  if (kind == Grant::create) {
    return insert_row(name, owner, role, terms, *token);
  }
  ColumnValue columns[] = {
      {kColToken, Int64GetDatum(*token), false},
      {kColAcquiredAt, TimestampTzGetDatum(terms.now), false},
      {kColExpiresAt, TimestampTzGetDatum(terms.expires_at), false},
      {kColTtl, IntervalPGetDatum(terms.ttl), false},
      {kColAcquiredBy, role, false},
      {kColOwner, CStringGetTextDatum(owner), false},
      {kColReleasedAt, 0, true},
      {kColRenewCount, 0, true},
      {kColLockDelay, IntervalPGetDatum(terms.lock_delay), false},
      {kColMaxHold, PointerGetDatum(terms.max_hold), terms.max_hold == nullptr},
      {kColBackendPid, Int32GetDatum(MyProcPid), false},
      {kColBackendStart, TimestampTzGetDatum(MyStartTimestamp), false},
      {kColForcedBy, 0, true},
      {kColForceReason, 0, true},
      {kColMinHold, PointerGetDatum(terms.min_hold), terms.min_hold == nullptr},
  };
  return update_row(*row, columns, lengthof(columns));
}

RowWrite write_renew(const LeaseRow& row, TimestampTz expires_at,
                     Interval* ttl) {
  ColumnValue columns[] = {
      {kColExpiresAt, TimestampTzGetDatum(expires_at), false},
      {kColTtl, IntervalPGetDatum(ttl), false},
      {kColRenewCount, Int64GetDatum(row.renew_count + 1), false},
  };
  return update_row(row, columns, lengthof(columns));
}

RowWrite delete_row(const LeaseRow& row) {
  Relation rel = open_table_of(row);
  TM_FailureData failure;
  TM_Result result =
      heap_delete(rel, &row.tuple->t_self, GetCurrentCommandId(true),
                  InvalidSnapshot, true, &failure, false);
  table_close(rel, NoLock);
  return row_write(result);
}

RowWrite write_release(const LeaseRow& row, TimestampTz now) {
  ColumnValue columns[] = {
      {kColReleasedAt, TimestampTzGetDatum(now), false},
  };
  return update_row(row, columns, lengthof(columns));
}

}  // namespace dlock::pg
