#include "lease_store.h"

namespace dlock {
namespace {

constexpr uint16 kGateKeySpace = 3;

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
};

Oid dlock_relation(const char* relname) {
  Oid relid = get_relname_relid(relname, get_namespace_oid("dlock", false));
  if (!OidIsValid(relid)) elog(ERROR, "dlock: relation dlock.%s is missing", relname);
  return relid;
}

// Saved plans, prepared on first use. Every reference is schema-qualified,
// operators included, so the caller's search_path cannot redirect them.
enum PlanId { kCreate, kTake, kExtend, kRenew, kRelease, kPlanCount };

struct PlanSpec {
  const char* sql;
  int nargs;
  Oid types[7];
};

// Grant plans share their arguments: $1 name, $2 owner, $3 role, $4 now,
// $5 expires_at, $6 ttl, $7 the token seen when deciding.
#define GRANT_ARG_TYPES                                                     \
  {TEXTOID, TEXTOID, REGROLEOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID, \
   INT8OID}

const PlanSpec kPlans[kPlanCount] = {
    // kCreate: first grant of a name.
    {"INSERT INTO dlock.lease_store"
     "       (name, token, acquired_at, expires_at, ttl, acquired_by, owner)"
     " VALUES ($1, pg_catalog.nextval('dlock.token_seq'::pg_catalog.regclass),"
     "         $4, $5, $6, $3, $2)"
     " ON CONFLICT (name) DO NOTHING"
     " RETURNING token",
     7, GRANT_ARG_TYPES},
    // kTake: a released or expired lease, with a new token.
    {"UPDATE dlock.lease_store"
     "   SET token = pg_catalog.nextval('dlock.token_seq'::pg_catalog.regclass),"
     "       acquired_at = $4, expires_at = $5, ttl = $6, acquired_by = $3,"
     "       owner = $2, released_at = NULL"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   AND token OPERATOR(pg_catalog.=) $7"
     "   AND (released_at IS NOT NULL"
     "        OR expires_at OPERATOR(pg_catalog.<=) $4)"
     " RETURNING token",
     7, GRANT_ARG_TYPES},
    // kExtend: the owner acquires a lease it holds: same token, later expiry.
    {"UPDATE dlock.lease_store"
     "   SET expires_at = $5, ttl = $6"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   AND token OPERATOR(pg_catalog.=) $7"
     "   AND owner OPERATOR(pg_catalog.=) $2"
     "   AND released_at IS NULL"
     "   AND expires_at OPERATOR(pg_catalog.>) $4"
     " RETURNING token",
     7, GRANT_ARG_TYPES},
    // kRenew: compare-and-set on (name, token). $3 now, $4 ttl or NULL to
    // keep the granted one.
    {"UPDATE dlock.lease_store"
     "   SET expires_at = $3 OPERATOR(pg_catalog.+) COALESCE($4, ttl),"
     "       ttl = COALESCE($4, ttl)"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   AND token OPERATOR(pg_catalog.=) $2"
     "   AND released_at IS NULL"
     "   AND expires_at OPERATOR(pg_catalog.>) $3"
     " RETURNING token, owner, acquired_at, expires_at",
     4,
     {TEXTOID, INT8OID, TIMESTAMPTZOID, INTERVALOID}},
    // kRelease: compare-and-delete on (name, token); the row stays, marked
    // released, so the lease's latest token and state remain visible.
    {"UPDATE dlock.lease_store"
     "   SET released_at = $3"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   AND token OPERATOR(pg_catalog.=) $2"
     "   AND released_at IS NULL"
     "   AND expires_at OPERATOR(pg_catalog.>) $3",
     3,
     {TEXTOID, INT8OID, TIMESTAMPTZOID}},
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

}  // namespace

std::optional<StoredLease> read_lease(const char* name) {
  Oid relid = dlock_relation("lease_store");
  Oid pkey = dlock_relation("lease_store_pkey");
  // See this transaction's own earlier writes, as an SPI query would.
  CommandCounterIncrement();
  Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
  Relation rel = table_open(relid, AccessShareLock);
  TupleDesc desc = RelationGetDescr(rel);

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
    (void)heap_getattr(tuple, kColReleasedAt, desc, &isnull);
    lease.released = !isnull;
    row = lease;
  }
  systable_endscan(scan);
  table_close(rel, NoLock);  // held to the end of the transaction
  UnregisterSnapshot(snapshot);
  return row;
}

LOCKTAG gate_tag(const char* name) {
  uint64 key = hash_bytes_extended(reinterpret_cast<const unsigned char*>(name),
                                   static_cast<int>(strlen(name)), 0);
  LOCKTAG tag;
  SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(key >> 32),
                       static_cast<uint32>(key), kGateKeySpace);
  return tag;
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
  w.caller = w.saved_user;
  HeapTuple tup = SearchSysCache1(
      RELOID, ObjectIdGetDatum(dlock_relation("lease_store")));
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

uint64 write_grant(const Writer& w, GrantWrite kind, const char* name,
                   const char* owner, TimestampTz now, TimestampTz expires_at,
                   Interval* ttl, int64 seen_token) {
  Datum args[7] = {
      CStringGetTextDatum(name),  CStringGetTextDatum(owner),
      ObjectIdGetDatum(w.caller), TimestampTzGetDatum(now),
      TimestampTzGetDatum(expires_at), IntervalPGetDatum(ttl),
      Int64GetDatum(seen_token),
  };
  PlanId id = kind == GrantWrite::create ? kCreate
              : kind == GrantWrite::take ? kTake
                                         : kExtend;
  return run(id, args, "       ");
}

uint64 write_renew(const char* name, int64 token, TimestampTz now,
                   Interval* ttl_or_null) {
  Datum args[4] = {CStringGetTextDatum(name), Int64GetDatum(token),
                   TimestampTzGetDatum(now), PointerGetDatum(ttl_or_null)};
  return run(kRenew, args, ttl_or_null ? "    " : "   n");
}

uint64 write_release(const char* name, int64 token, TimestampTz now) {
  Datum args[3] = {CStringGetTextDatum(name), Int64GetDatum(token),
                   TimestampTzGetDatum(now)};
  return run(kRelease, args, "   ");
}

int64 result_token() { return DatumGetInt64(result_column(1)); }

TimestampTz result_timestamp(int column) {
  return DatumGetTimestampTz(result_column(column));
}

char* result_text(int column) {
  return TextDatumGetCString(result_column(column));
}

}  // namespace dlock
