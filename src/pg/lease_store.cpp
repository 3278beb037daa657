#include "../core/errors.h"
#include "../core/fencing.h"

#include "lease_store.h"

namespace dlock {
namespace {

constexpr uint16 kGateKeySpace = 3;
constexpr uint16 kWaitingKeySpace = 4;

LOCKTAG lease_tag(const char* name, uint16 key_space) {
  uint64 key = hash_bytes_extended(reinterpret_cast<const unsigned char*>(name),
                                   static_cast<int>(strlen(name)), 0);
  LOCKTAG tag;
  SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(key >> 32),
                       static_cast<uint32>(key), key_space);
  return tag;
}

// Column numbers of dlock.lease_store, in the order the install script
// creates them (upgrades may only append columns). Checked by the
// lease_store regression test.
enum LeaseColumn : AttrNumber {
  kColName = 1,
  kColToken,
  kColAcquiredAt,
  kColExpiresAt,
  kColTtl,
  kColAcquiredBy,
  kColOwner,
  kColReleasedAt,
  // 0.3.0
  kColRenewCount,
  kColLockDelay,
  kColMaxHold,
  kColBackendPid,
  kColBackendStart,
  kColForcedBy,
  kColForceReason,
  kColumnCount = kColForceReason,
};

// dlock's relations on the hot paths, looked up by name once per backend
// and forgotten on any invalidation that may concern them (DROP and CREATE
// EXTENSION, a renamed schema), so a lease call costs no catalog lookup.
enum DlockRelation { kLeaseStore, kLeaseStorePkey, kTokenSeq, kRelationCount };
const char* const kRelationNames[kRelationCount] = {
    "lease_store", "lease_store_pkey", "token_seq"};
Oid relation_oids[kRelationCount];

// The history (cluster, WAL timeline) this backend last saw tokens issued
// on; zero until checked. A backend serves one database, so the database
// needs no cache entry. See enter_epoch().
uint64 epoch_system_identifier = 0;
TimeLineID epoch_timeline = 0;

// Forgets the relations and, with them, the history checked against their
// dlock.token_epoch: after DROP and CREATE EXTENSION it is a new table.
void forget_relations() {
  for (Oid& oid : relation_oids) oid = InvalidOid;
  epoch_system_identifier = 0;
  epoch_timeline = 0;
}

void on_relcache_invalidation(Datum, Oid relid) {
  for (Oid oid : relation_oids) {
    if (!OidIsValid(relid) || relid == oid) {
      forget_relations();
      return;
    }
  }
}

void on_namespace_invalidation(Datum, int, uint32) { forget_relations(); }

Oid dlock_relation(DlockRelation which) {
  static bool callbacks_registered = false;
  if (!callbacks_registered) {
    CacheRegisterRelcacheCallback(on_relcache_invalidation, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, on_namespace_invalidation, 0);
    callbacks_registered = true;
  }
  if (!OidIsValid(relation_oids[which])) {
    const char* relname = kRelationNames[which];
    Oid relid = get_relname_relid(relname, get_namespace_oid("dlock", false));
    if (!OidIsValid(relid)) {
      elog(ERROR, "dlock: relation dlock.%s is missing", relname);
    }
    relation_oids[which] = relid;
  }
  return relation_oids[which];
}

// Saved plans, prepared on first use. Every reference is schema-qualified,
// operators included, so the caller's search_path cannot redirect them.
enum PlanId {
  kCreate,
  kForceRelease,
  kHeldByOwner,
  kSweepable,
  kSweepDelete,
  kReadForShare,
  kEpochRead,
  kEpochLock,
  kEpochWrite,
  kFence,
  kFenceRead,
  kAdvisoryName,
  kPlanCount
};

struct PlanSpec {
  const char* sql;
  int nargs;
  Oid types[12];
};

const PlanSpec kPlans[kPlanCount] = {
    // kCreate: first grant of a name; nothing if another transaction
    // created it since it was read. $1 name, $2 owner, $3 role, $4 now,
    // $5 expires_at, $6 ttl, $7 token, $8 lock_delay, $9 max_hold,
    // $10 backend pid, $11 backend start.
    {"INSERT INTO dlock.lease_store"
     "       (name, token, acquired_at, expires_at, ttl, acquired_by, owner,"
     "        lock_delay, max_hold, backend_pid, backend_start)"
     " VALUES ($1, $7, $4, $5, $6, $3, $2, $8, $9, $10, $11)"
     " ON CONFLICT (name) DO NOTHING",
     11,
     {TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID,
      INT8OID, INTERVALOID, INTERVALOID, INT4OID, TIMESTAMPTZOID}},
    // kForceRelease: ends the grant, whoever holds it, recording who and why.
    {"UPDATE dlock.lease_store"
     "   SET released_at = $2, forced_by = $3, force_reason = $4"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   AND released_at IS NULL"
     " RETURNING token, owner, acquired_at, expires_at",
     4,
     {TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID}},
    // kHeldByOwner: what an owner holds now.
    {"SELECT name, token, acquired_by FROM dlock.lease_store"
     " WHERE owner OPERATOR(pg_catalog.=) $1"
     "   AND released_at IS NULL"
     "   AND expires_at OPERATOR(pg_catalog.>) $2"
     " ORDER BY name",
     2,
     {TEXTOID, TIMESTAMPTZOID}},
    // kSweepable: leases released, or expired past their lock-delay, before $1.
    {"SELECT name FROM dlock.lease_store"
     " WHERE released_at OPERATOR(pg_catalog.<) $1"
     "    OR (released_at IS NULL"
     "        AND expires_at OPERATOR(pg_catalog.+) lock_delay"
     "            OPERATOR(pg_catalog.<) $1)"
     " ORDER BY name LIMIT $2",
     2,
     {TIMESTAMPTZOID, INT4OID}},
    // kSweepDelete: the same test again, on the row itself.
    {"DELETE FROM dlock.lease_store"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   AND (released_at OPERATOR(pg_catalog.<) $2"
     "        OR (released_at IS NULL"
     "            AND expires_at OPERATOR(pg_catalog.+) lock_delay"
     "                OPERATOR(pg_catalog.<) $2))",
     2,
     {TEXTOID, TIMESTAMPTZOID}},
    // kReadForShare: the lease, row-locked so that no other transaction can
    // write it (a takeover included) until this one ends.
    {"SELECT token, owner, acquired_at, expires_at, ttl,"
     "       released_at IS NOT NULL, acquired_by, forced_by, force_reason"
     "  FROM dlock.lease_store"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   FOR SHARE",
     1,
     {TEXTOID}},
    // kEpochRead: the history (cluster, timeline, database) tokens were
    // last issued on.
    {"SELECT system_identifier, timeline, database"
     "  FROM dlock.token_epoch",
     0,
     {}},
    // kEpochLock: the same, locked so that one transaction moves the
    // sequence to a new epoch.
    {"SELECT system_identifier, timeline, database"
     "  FROM dlock.token_epoch FOR UPDATE",
     0,
     {}},
    // kEpochWrite: tokens are now issued on this history.
    {"INSERT INTO dlock.token_epoch AS e"
     "       (system_identifier, timeline, database)"
     " VALUES ($1, $2, $3)"
     " ON CONFLICT (single_row) DO UPDATE"
     "   SET system_identifier = $1, timeline = $2, database = $3",
     3,
     {INT8OID, INT4OID, OIDOID}},
    // kFence: accept a token equal to or above the resource's highest.
    // ON CONFLICT locks the resource's row even when the token is refused.
    {"INSERT INTO dlock.fences AS f (resource, token, fenced_at)"
     " VALUES ($1, $2, $3)"
     " ON CONFLICT (resource) DO UPDATE"
     "   SET token = $2, fenced_at = $3"
     " WHERE f.token OPERATOR(pg_catalog.<=) $2"
     " RETURNING token",
     3,
     {TEXTOID, INT8OID, TIMESTAMPTZOID}},
    // kFenceRead: the resource's highest accepted token.
    {"SELECT token FROM dlock.fences WHERE resource OPERATOR(pg_catalog.=) $1",
     1,
     {TEXTOID}},
    // kAdvisoryName: the name behind an advisory key; writes nothing when
    // the key is already known.
    {"INSERT INTO dlock.advisory_names (key, name) VALUES ($1, $2)"
     " ON CONFLICT (key) DO NOTHING",
     2,
     {INT8OID, TEXTOID}},
};

SPIPlanPtr saved_plans[kPlanCount];

// Runs a saved plan; nulls[i] is 'n' for a NULL argument, ' ' otherwise.
uint64 run(PlanId id, Datum* args, const char* nulls) {
  if (saved_plans[id] == nullptr) {
    const PlanSpec& spec = kPlans[id];
    SPIPlanPtr p =
        SPI_prepare(spec.sql, spec.nargs, const_cast<Oid*>(spec.types));
    if (p == nullptr) {
      elog(ERROR, "dlock: SPI_prepare failed: %s",
           SPI_result_code_string(SPI_result));
    }
    SPI_keepplan(p);
    saved_plans[id] = p;
  }
  int rc = SPI_execute_plan(saved_plans[id], args, nulls, false, 0);
  if (rc < 0) {
    elog(ERROR, "dlock: SPI_execute_plan failed: %s",
         SPI_result_code_string(rc));
  }
  return SPI_processed;
}

Datum result_column(int column) {
  bool isnull;
  return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, column,
                       &isnull);
}

Micros duration_of(Datum interval) {
  const Interval* iv = DatumGetIntervalP(interval);
  return duration(IntervalFields{iv->time, iv->day, iv->month}, "interval");
}

StoredLease result_lease() {
  StoredLease lease;
  lease.token = DatumGetInt64(result_column(1));
  lease.owner = TextDatumGetCString(result_column(2));
  lease.acquired_at = DatumGetTimestampTz(result_column(3));
  lease.expires_at = DatumGetTimestampTz(result_column(4));
  lease.ttl = DatumGetIntervalP(result_column(5));
  lease.released = DatumGetBool(result_column(6));
  lease.lock_delay = 0;  // not read by assert_held
  lease.max_hold = 0;
  lease.renew_count = 0;
  lease.tuple = nullptr;
  lease.acquired_by = TextDatumGetCString(result_column(7));
  bool isnull;
  Datum forced_by = SPI_getbinval(SPI_tuptable->vals[0],
                                  SPI_tuptable->tupdesc, 8, &isnull);
  lease.forced_by = isnull ? nullptr : TextDatumGetCString(forced_by);
  Datum reason = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
                               9, &isnull);
  lease.force_reason = isnull ? nullptr : TextDatumGetCString(reason);
  return lease;
}

// Moves the sequence to a new epoch when tokens are about to be issued on
// a history (cluster, timeline, database: a CREATE DATABASE ... TEMPLATE
// copy must not repeat its original's tokens) other than the one recorded in
// dlock.token_epoch. A database at extension version 0.1.0 has no such
// table and keeps issuing plain sequence values.
void enter_epoch(Oid seq) {
  uint64 sysid = GetSystemIdentifier();
  TimeLineID tli = GetWALInsertionTimeLine();
  if (sysid == epoch_system_identifier && tli == epoch_timeline) return;
  Oid nsp = get_namespace_oid("dlock", false);
  if (!OidIsValid(get_relname_relid("token_epoch", nsp))) return;

  Writer w = open_writer();
  // Read first without locking: the row lock of a history check would
  // otherwise last as long as the calling transaction, a long acquire()
  // wait included, and stall every other session's first grant.
  auto recorded_history_is_current = [&](PlanId plan) {
    return run(plan, nullptr, "") == 1 &&
           static_cast<uint64>(DatumGetInt64(result_column(1))) == sysid &&
           static_cast<TimeLineID>(DatumGetInt32(result_column(2))) == tli &&
           DatumGetObjectId(result_column(3)) == MyDatabaseId;
  };
  if (!recorded_history_is_current(kEpochRead) &&
      !recorded_history_is_current(kEpochLock)) {
    std::optional<int64> last = last_issued_token();
    if (last) {
      DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seq),
                          Int64GetDatum(epoch_floor(*last)));
    }
    Datum args[3] = {Int64GetDatum(static_cast<int64>(sysid)),
                     Int32GetDatum(static_cast<int32>(tli)),
                     ObjectIdGetDatum(MyDatabaseId)};
    run(kEpochWrite, args, "   ");
  }
  close_writer(w);
  epoch_system_identifier = sysid;
  epoch_timeline = tli;
}

}  // namespace

int64 next_token() {
  Oid seq = dlock_relation(kTokenSeq);
  HeapTuple tup = SearchSysCache1(SEQRELID, ObjectIdGetDatum(seq));
  if (!HeapTupleIsValid(tup)) elog(ERROR, "dlock: token_seq is not a sequence");
  Form_pg_sequence form = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tup));
  bool cycles = form->seqcycle;
  int64 cache = form->seqcache;
  int64 increment = form->seqincrement;
  ReleaseSysCache(tup);
  check_token_sequence(cycles, cache, increment,
                       get_rel_persistence(seq) == RELPERSISTENCE_PERMANENT);
  enter_epoch(seq);
  return nextval_internal(seq, false);
}

std::optional<int64> last_issued_token() {
  LOCAL_FCINFO(call, 1);
  InitFunctionCallInfoData(*call, nullptr, 1, InvalidOid, nullptr, nullptr);
  call->args[0].value = ObjectIdGetDatum(dlock_relation(kTokenSeq));
  call->args[0].isnull = false;
  Datum last = pg_sequence_last_value(call);
  if (call->isnull) return std::nullopt;
  return DatumGetInt64(last);
}

std::optional<StoredLease> read_lease_for_share(const char* name) {
  Datum args[1] = {CStringGetTextDatum(name)};
  if (run(kReadForShare, args, " ") == 0) return std::nullopt;
  return result_lease();
}

bool write_fence(const char* resource, int64 token, int64* highest) {
  Datum args[3] = {CStringGetTextDatum(resource), Int64GetDatum(token),
                   TimestampTzGetDatum(GetCurrentTimestamp())};
  if (run(kFence, args, "   ") == 1) {
    *highest = token;
    return true;
  }
  run(kFenceRead, args, " ");
  *highest = DatumGetInt64(result_column(1));
  return false;
}

void remember_advisory_name(int64 key, const char* name) {
  // Only where writing it cannot fail: not read-only, not on a standby,
  // and not under a transaction snapshot, where a concurrent first use of
  // the name would be a serialization failure.
  if (XactReadOnly || RecoveryInProgress() || IsolationUsesXactSnapshot()) {
    return;
  }
  Datum args[2] = {Int64GetDatum(key), CStringGetTextDatum(name)};
  run(kAdvisoryName, args, "  ");
}

std::optional<StoredLease> read_lease(const char* name) {
  Oid relid = dlock_relation(kLeaseStore);
  Oid pkey = dlock_relation(kLeaseStorePkey);
  // See this transaction's own earlier writes, as an SPI query would.
  CommandCounterIncrement();
  Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
  Relation rel = table_open(relid, AccessShareLock);
  TupleDesc desc = RelationGetDescr(rel);
  if (desc->natts < kColumnCount) {
    throw Error(sqlstate::object_not_in_prerequisite_state,
                "dlock's SQL objects are older than its library",
                {}, "Run ALTER EXTENSION dlock UPDATE.");
  }

  ScanKeyData key;
  ScanKeyInit(&key, kColName, BTEqualStrategyNumber, F_TEXTEQ,
              CStringGetTextDatum(name));
  key.sk_collation = TupleDescAttr(desc, kColName - 1)->attcollation;
  SysScanDesc scan = systable_beginscan(rel, pkey, true, snapshot, 1, &key);

  std::optional<StoredLease> row;
  HeapTuple tuple = systable_getnext(scan);
  if (HeapTupleIsValid(tuple)) {
    bool isnull;
    StoredLease lease;
    lease.token = DatumGetInt64(heap_getattr(tuple, kColToken, desc, &isnull));
    lease.owner =
        TextDatumGetCString(heap_getattr(tuple, kColOwner, desc, &isnull));
    lease.acquired_at = DatumGetTimestampTz(
        heap_getattr(tuple, kColAcquiredAt, desc, &isnull));
    lease.expires_at = DatumGetTimestampTz(
        heap_getattr(tuple, kColExpiresAt, desc, &isnull));
    lease.ttl = DatumGetIntervalP(
        datumCopy(heap_getattr(tuple, kColTtl, desc, &isnull), false,
                  sizeof(Interval)));
    (void)heap_getattr(tuple, kColReleasedAt, desc, &isnull);
    lease.released = !isnull;
    lease.lock_delay = duration_of(heap_getattr(tuple, kColLockDelay, desc, &isnull));
    Datum max_hold = heap_getattr(tuple, kColMaxHold, desc, &isnull);
    lease.max_hold = isnull ? 0 : duration_of(max_hold);
    Datum forced_by = heap_getattr(tuple, kColForcedBy, desc, &isnull);
    lease.forced_by = isnull ? nullptr : TextDatumGetCString(forced_by);
    Datum reason = heap_getattr(tuple, kColForceReason, desc, &isnull);
    lease.force_reason = isnull ? nullptr : TextDatumGetCString(reason);
    lease.acquired_by = TextDatumGetCString(
        heap_getattr(tuple, kColAcquiredBy, desc, &isnull));
    lease.renew_count =
        DatumGetInt64(heap_getattr(tuple, kColRenewCount, desc, &isnull));
    lease.tuple = heap_copytuple(tuple);
    row = lease;
  }
  systable_endscan(scan);
  table_close(rel, NoLock);  // held to the end of the transaction
  UnregisterSnapshot(snapshot);
  return row;
}

LOCKTAG gate_tag(const char* name) { return lease_tag(name, kGateKeySpace); }

LOCKTAG waiting_tag(const char* name) {
  return lease_tag(name, kWaitingKeySpace);
}

bool try_gate(const LOCKTAG& gate) {
  return LockAcquire(&gate, ExclusiveLock, false, true) !=
         LOCKACQUIRE_NOT_AVAIL;
}

void release_gate(const LOCKTAG& gate) {
  LockRelease(&gate, ExclusiveLock, false);
}

void wait_gate(const char* name) {
  LOCKTAG gate = gate_tag(name);
  (void)LockAcquire(&gate, ExclusiveLock, false, false);
}

Writer open_writer() {
  Writer w;
  w.caller_cxt = CurrentMemoryContext;
  GetUserIdAndSecContext(&w.saved_user, &w.saved_sec_context);
  HeapTuple tup = SearchSysCache1(
      RELOID, ObjectIdGetDatum(dlock_relation(kLeaseStore)));
  if (!HeapTupleIsValid(tup)) elog(ERROR, "dlock: lease_store is missing");
  Oid table_owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
  ReleaseSysCache(tup);
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "dlock: SPI_connect failed");
  SetUserIdAndSecContext(table_owner,
                         w.saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
  return w;
}

void close_writer(const Writer& w) {
  SetUserIdAndSecContext(w.saved_user, w.saved_sec_context);
  SPI_finish();
}

namespace {

// One column of a lease row to set.
struct ColumnValue {
  AttrNumber column;
  Datum value;
  bool isnull;
};

// Index entries for a row version that is not heap-only, made by the
// executor's own routine, as for an UPDATE: indexes not yet ready (during
// CREATE INDEX CONCURRENTLY, or left behind by a failed one) are skipped,
// partial and expression indexes are evaluated, unique and exclusion
// constraints checked.
void insert_index_entries(Relation rel, HeapTuple tuple) {
  EState* estate = CreateExecutorState();
  ResultRelInfo* target = makeNode(ResultRelInfo);
  InitResultRelInfo(target, rel, 0, nullptr, 0);
  ExecOpenIndices(target, false);
  TupleTableSlot* slot = ExecInitExtraTupleSlot(
      estate, RelationGetDescr(rel), &TTSOpsHeapTuple);
  ExecStoreHeapTuple(tuple, slot, false);
  // update = true: the hint that lets btree delete the row's older
  // versions bottom-up (right for the primary key: a lease's name never
  // changes; only a hint for any other index).
  List* deferred = ExecInsertIndexTuples(target, slot, estate, true, false,
                                         nullptr, NIL);
  if (deferred != NIL) {
    elog(ERROR, "dlock: deferrable constraints on dlock.lease_store are not "
                "supported");
  }
  ExecCloseIndices(target);
  ExecResetTupleTable(estate->es_tupleTable, false);
  FreeExecutorState(estate);
}

// Replaces the version of the lease row that read_lease() returned by one
// with `columns` set, as an UPDATE would (heap-only when it can, so that
// a lease's many grants and releases need no index entries), without
// planning or running a statement. The caller holds the lease's gate, so
// no other dlock write of the row is in flight.
RowWrite update_row(const StoredLease& row, const ColumnValue* columns,
                    int count) {
  Relation rel = table_open(dlock_relation(kLeaseStore), RowExclusiveLock);
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
  HeapTuple updated = heap_modify_tuple(row.tuple, desc, values, nulls, replace);
  TM_FailureData failure;
  LockTupleMode lock_mode;
  TM_Result result =
      heap_update(rel, &row.tuple->t_self, updated, GetCurrentCommandId(true),
                  InvalidSnapshot, true, &failure, &lock_mode);
  switch (result) {
    case TM_Ok:
      if (!HeapTupleIsHeapOnly(updated)) insert_index_entries(rel, updated);
      table_close(rel, NoLock);
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
      table_close(rel, NoLock);
      return RowWrite::changed;
    default:
      elog(ERROR, "dlock: unexpected result %d updating a lease row",
           static_cast<int>(result));
  }
}

}  // namespace

RowWrite write_grant(GrantWrite kind, const char* name,
                     const StoredLease* row, const char* owner,
                     const GrantTerms& terms, int64* token) {
  if (kind == GrantWrite::extend) {
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
  check_token_grows(*token, row ? row->token : 0);
  Datum role = CStringGetTextDatum(GetUserNameFromId(GetUserId(), false));
  bool no_max_hold = terms.max_hold == nullptr;
  Datum max_hold = PointerGetDatum(terms.max_hold);
  if (kind == GrantWrite::take) {
    ColumnValue columns[] = {
        {kColToken, Int64GetDatum(*token), false},
        {kColAcquiredAt, TimestampTzGetDatum(terms.now), false},
        {kColExpiresAt, TimestampTzGetDatum(terms.expires_at), false},
        {kColTtl, IntervalPGetDatum(terms.ttl), false},
        {kColAcquiredBy, role, false},
        {kColOwner, CStringGetTextDatum(owner), false},
        {kColReleasedAt, 0, true},
        {kColRenewCount, Int64GetDatum(0), false},
        {kColLockDelay, IntervalPGetDatum(terms.lock_delay), false},
        {kColMaxHold, max_hold, no_max_hold},
        {kColBackendPid, Int32GetDatum(MyProcPid), false},
        {kColBackendStart, TimestampTzGetDatum(MyStartTimestamp), false},
        {kColForcedBy, 0, true},
        {kColForceReason, 0, true},
    };
    return update_row(*row, columns, lengthof(columns));
  }
  Datum args[11] = {
      CStringGetTextDatum(name),
      CStringGetTextDatum(owner),
      role,
      TimestampTzGetDatum(terms.now),
      TimestampTzGetDatum(terms.expires_at),
      IntervalPGetDatum(terms.ttl),
      Int64GetDatum(*token),
      IntervalPGetDatum(terms.lock_delay),
      max_hold,
      Int32GetDatum(MyProcPid),
      TimestampTzGetDatum(MyStartTimestamp),
  };
  Writer w = open_writer();
  uint64 created = run(kCreate, args, no_max_hold ? "        n  " : "           ");
  close_writer(w);
  return created == 1 ? RowWrite::written : RowWrite::changed;
}

RowWrite write_renew(const StoredLease& row, TimestampTz expires_at,
                     Interval* ttl) {
  ColumnValue columns[] = {
      {kColExpiresAt, TimestampTzGetDatum(expires_at), false},
      {kColTtl, IntervalPGetDatum(ttl), false},
      {kColRenewCount, Int64GetDatum(row.renew_count + 1), false},
  };
  return update_row(row, columns, lengthof(columns));
}

RowWrite write_release(const StoredLease& row, TimestampTz now) {
  ColumnValue columns[] = {
      {kColReleasedAt, TimestampTzGetDatum(now), false},
  };
  return update_row(row, columns, lengthof(columns));
}

uint64 write_force_release(const char* name, TimestampTz now, const char* by,
                           const char* reason, StoredLease* ended) {
  Datum args[4] = {CStringGetTextDatum(name), TimestampTzGetDatum(now),
                   CStringGetTextDatum(by), CStringGetTextDatum(reason)};
  if (run(kForceRelease, args, "    ") == 0) return 0;
  ended->token = DatumGetInt64(result_column(1));
  ended->owner = TextDatumGetCString(result_column(2));
  ended->acquired_at = DatumGetTimestampTz(result_column(3));
  ended->expires_at = DatumGetTimestampTz(result_column(4));
  ended->ttl = nullptr;
  ended->released = true;
  ended->lock_delay = 0;
  ended->max_hold = 0;
  ended->forced_by = by;
  ended->force_reason = reason;
  ended->acquired_by = nullptr;
  ended->renew_count = 0;
  ended->tuple = nullptr;
  return 1;
}

int held_by_owner(const char* owner, TimestampTz now, MemoryContext into,
                  char*** names, int64** tokens, char*** roles) {
  Datum args[2] = {CStringGetTextDatum(owner), TimestampTzGetDatum(now)};
  int n = static_cast<int>(run(kHeldByOwner, args, "  "));
  // Copied out of SPI's memory: the caller uses them after SPI_finish.
  MemoryContext old = MemoryContextSwitchTo(into);
  *names = static_cast<char**>(palloc0(sizeof(char*) * (n + 1)));
  *tokens = static_cast<int64*>(palloc0(sizeof(int64) * (n + 1)));
  *roles = static_cast<char**>(palloc0(sizeof(char*) * (n + 1)));
  for (int i = 0; i < n; ++i) {
    bool isnull;
    HeapTuple row = SPI_tuptable->vals[i];
    TupleDesc desc = SPI_tuptable->tupdesc;
    (*names)[i] = TextDatumGetCString(SPI_getbinval(row, desc, 1, &isnull));
    (*tokens)[i] = DatumGetInt64(SPI_getbinval(row, desc, 2, &isnull));
    (*roles)[i] = TextDatumGetCString(SPI_getbinval(row, desc, 3, &isnull));
  }
  MemoryContextSwitchTo(old);
  return n;
}

int sweepable(TimestampTz before, int limit, char*** names) {
  Datum args[2] = {TimestampTzGetDatum(before), Int32GetDatum(limit)};
  int n = static_cast<int>(run(kSweepable, args, "  "));
  *names = static_cast<char**>(palloc0(sizeof(char*) * (n + 1)));
  for (int i = 0; i < n; ++i) {
    bool isnull;
    (*names)[i] = TextDatumGetCString(SPI_getbinval(
        SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
  }
  return n;
}

uint64 delete_swept(const char* name, TimestampTz before) {
  Datum args[2] = {CStringGetTextDatum(name), TimestampTzGetDatum(before)};
  return run(kSweepDelete, args, "  ");
}

}  // namespace dlock
