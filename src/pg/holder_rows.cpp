#include "holder_rows.h"
#include "relations.h"
#include "spi.h"
#include "tokens.h"

namespace dlock::pg {

namespace {

SavedPlan insert_holder_row = {
    "INSERT INTO dlock.lease_holders"
    "       (name, token, acquired_at, expires_at, ttl, acquired_by, owner,"
    "        lock_delay, max_hold, backend_pid, backend_start, min_hold,"
    "        shared, permits)"
    " VALUES ($1, $7, $4, $5, $6, $3, $2, $8, $9, $10, $11, $12, $13, $14)",
    14,
    {TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID,
     INT8OID, INTERVALOID, INTERVALOID, INT4OID, TIMESTAMPTZOID, INTERVALOID,
     BOOLOID, INT4OID},
    nullptr};

SavedPlan select_holder_for_share = {
    "SELECT " DLOCK_HOLDER_COLUMNS
    " FROM dlock.lease_holders"
    " WHERE name OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
    " FOR SHARE",
    2,
    {TEXTOID, INT8OID},
    nullptr};

// Scans the primary key on the name, and the token if `token` is not 0.
HolderRows scan_holders(const char* name, int64 token, Seen seen) {
  Oid relid = dlock_relation(DlockRelation::lease_holders);
  Oid pkey = dlock_relation(DlockRelation::lease_holders_pkey);
  // See this transaction's own earlier writes.
  CommandCounterIncrement();
  Snapshot snapshot = RegisterSnapshot(
      seen == Seen::latest ? GetLatestSnapshot() : GetTransactionSnapshot());
  Relation rel = table_open(relid, AccessShareLock);
  TupleDesc desc = RelationGetDescr(rel);
  ScanKeyData keys[2];
  ScanKeyInit(&keys[0], kColName, BTEqualStrategyNumber, F_TEXTEQ,
              CStringGetTextDatum(name));
  keys[0].sk_collation = TupleDescAttr(desc, kColName - 1)->attcollation;
  ScanKeyInit(&keys[1], kColToken, BTEqualStrategyNumber, F_INT8EQ,
              Int64GetDatum(token));
  SysScanDesc scan =
      systable_beginscan(rel, pkey, true, snapshot, token != 0 ? 2 : 1, keys);
  HolderRows found{nullptr, 0};
  int room = 0;
  for (HeapTuple tuple; HeapTupleIsValid(tuple = systable_getnext(scan));) {
    if (found.count == room) {
      room = room == 0 ? 8 : room * 2;
      size_t bytes = sizeof(StoredLease) * room;
      found.rows = static_cast<StoredLease*>(
          found.rows == nullptr ? palloc(bytes) : repalloc(found.rows, bytes));
    }
    StoredLease& row = found.rows[found.count++];
    row = decode_holder(tuple, desc, CurrentMemoryContext);
    row.tuple = heap_copytuple(tuple);
  }
  systable_endscan(scan);
  table_close(rel, NoLock);  // held to the end of the transaction
  UnregisterSnapshot(snapshot);
  return found;
}

}  // namespace

HolderRows read_holders(const char* name, Seen seen) {
  return scan_holders(name, 0, seen);
}

std::optional<StoredLease> read_holder(const char* name, int64 token) {
  // Tokens are positive: 0 would scan every holder of the name.
  if (token <= 0) return std::nullopt;
  HolderRows rows = scan_holders(name, token, Seen::snapshot);
  if (rows.count == 0) return std::nullopt;
  return rows.rows[0];
}

std::optional<StoredLease> read_holder_for_share(const char* name,
                                                 int64 token) {
  OwnerSpi spi = owner_spi_connect();
  Datum args[2] = {CStringGetTextDatum(name), Int64GetDatum(token)};
  std::optional<StoredLease> row;
  if (run_plan(select_holder_for_share, args, "  ") == 1) {
    row = decode_holder(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
                        spi.caller_cxt);
  }
  owner_spi_finish(spi);
  return row;
}

namespace {

// The name's latest grant, of its lease_store row and its holders.
std::optional<StoredLease> latest_grant(const char* name,
                                        const std::optional<StoredLease>& row) {
  std::optional<StoredLease> latest = row;
  HolderRows holders = read_holders(name, Seen::snapshot);
  for (int i = 0; i < holders.count; ++i) {
    if (!latest || holders.rows[i].token > latest->token) {
      latest = holders.rows[i];
    }
  }
  return latest;
}

}  // namespace

std::optional<StoredLease> read_grant(const char* name, int64 token) {
  std::optional<StoredLease> row = read_lease(name);
  if (row && row->token == token) return row;
  std::optional<StoredLease> holder = read_holder(name, token);
  if (holder) return holder;
  // A snapshot older than the grant cannot say it was never made.
  if (IsolationUsesXactSnapshot() &&
      !same_version(row, read_lease(name, Seen::latest))) {
    raise_serialization_failure();
  }
  return latest_grant(name, row);
}

int64 latest_token(const char* name) {
  std::optional<StoredLease> latest = latest_grant(name, read_lease(name));
  return latest ? latest->token : 0;
}

void insert_holder(const char* name, const char* owner, bool shared,
                   int permits, const GrantTerms& terms, int64* token) {
  *token = next_token();
  Datum args[14] = {
      CStringGetTextDatum(name),
      CStringGetTextDatum(owner),
      CStringGetTextDatum(GetUserNameFromId(GetUserId(), false)),
      TimestampTzGetDatum(terms.now),
      TimestampTzGetDatum(terms.expires_at),
      IntervalPGetDatum(terms.ttl),
      Int64GetDatum(*token),
      IntervalPGetDatum(terms.lock_delay),
      PointerGetDatum(terms.max_hold),
      Int32GetDatum(MyProcPid),
      TimestampTzGetDatum(MyStartTimestamp),
      PointerGetDatum(terms.min_hold),
      BoolGetDatum(shared),
      Int32GetDatum(permits),
  };
  char nulls[] = "              ";
  if (terms.max_hold == nullptr) nulls[8] = 'n';
  if (terms.min_hold == nullptr) nulls[11] = 'n';
  OwnerSpi spi = owner_spi_connect();
  (void)run_plan(insert_holder_row, args, nulls);
  owner_spi_finish(spi);
}

}  // namespace dlock::pg
