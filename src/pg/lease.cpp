// SQL-callable lease functions: try_acquire, acquire, renew, release, get,
// default_owner. The rules live in src/core; this file reads arguments,
// runs dlock's saved SPI plans as the extension owner, and builds results.
//
// Every frame here owns only trivially destructible values, so it may call
// PostgreSQL directly (see boundary.h).
#include <type_traits>

#include "../core/backoff.h"
#include "../core/errors.h"
#include "../core/lease_rules.h"

// PostgreSQL headers only after the core ones.
#include "boundary.h"
#include "module.h"

namespace dlock {
namespace {

// ---------------------------------------------------------------- arguments

// Key space (advisory lock field 4) of dlock's per-lease grant gate; the
// user-visible advisory key spaces are 1 (bigint) and 2 (int4 pair).
constexpr uint16 kGateKeySpace = 3;

struct Request {
  const char* name;
  const char* owner;
  Micros ttl;
};
static_assert(std::is_trivially_destructible_v<Request>);
static_assert(std::is_trivially_destructible_v<Backoff>);
static_assert(std::is_trivially_destructible_v<std::optional<LeaseRow>>);

const char* required_text(FunctionCallInfo fcinfo, int arg, const char* what) {
  if (PG_ARGISNULL(arg)) {
    throw Error(sqlstate::null_value_not_allowed,
                std::string(what) + " must not be NULL");
  }
  return text_to_cstring(PG_GETARG_TEXT_PP(arg));
}

IntervalFields interval_fields(const Interval* iv) {
  return IntervalFields{iv->time, iv->day, iv->month};
}

const Interval* required_interval(FunctionCallInfo fcinfo, int arg,
                                  const char* what) {
  if (PG_ARGISNULL(arg)) {
    throw Error(sqlstate::null_value_not_allowed,
                std::string(what) + " must not be NULL");
  }
  return PG_GETARG_INTERVAL_P(arg);
}

int64 required_token(FunctionCallInfo fcinfo, int arg) {
  if (PG_ARGISNULL(arg)) {
    throw Error(sqlstate::null_value_not_allowed, "token must not be NULL");
  }
  return PG_GETARG_INT64(arg);
}

Micros max_ttl() { return static_cast<Micros>(max_ttl_ms) * 1000; }

// The session's default owner: "<application_name>:<pid>:<backend start,
// Unix ms>", fixed at first use so that renaming the application later does
// not change who holds the session's leases.
const char* default_owner() {
  static char owner[kMaxOwnerBytes + 1];
  if (owner[0] == '\0') {
    const char* app = (application_name && application_name[0])
                          ? application_name
                          : "session";
    long long start_ms =
        (MyStartTimestamp / 1000) +
        (static_cast<long long>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
         SECS_PER_DAY * 1000);
    snprintf(owner, sizeof owner, "%s:%d:%lld", app, MyProcPid, start_ms);
  }
  return owner;
}

const char* owner_arg(FunctionCallInfo fcinfo, int arg) {
  if (PG_ARGISNULL(arg)) return default_owner();
  const char* owner = text_to_cstring(PG_GETARG_TEXT_PP(arg));
  check_owner(owner);
  return owner;
}

Request lease_request(FunctionCallInfo fcinfo, int owner_argno) {
  Request req;
  req.name = required_text(fcinfo, 0, "lease name");
  check_name(req.name);
  req.ttl = check_ttl(interval_fields(required_interval(fcinfo, 1, "ttl")),
                      max_ttl());
  req.owner = owner_arg(fcinfo, owner_argno);
  return req;
}

Interval* exact_interval(Micros us) {
  Interval* iv = static_cast<Interval*>(palloc0(sizeof(Interval)));
  iv->time = us;
  return iv;
}

// ---------------------------------------------------------------- SPI plans

// Saved plans, prepared on first use. Every reference is schema-qualified,
// operators included, so the caller's search_path cannot redirect them.
enum PlanId { kRead, kInsert, kTake, kExtend, kRenew, kRelease, kPlanCount };

struct PlanSpec {
  const char* sql;
  int nargs;
  Oid types[8];
};

const PlanSpec kPlans[kPlanCount] = {
    // kRead: the lease as last committed, without locking it.
    {"SELECT token, owner, acquired_at, expires_at,"
     "       released_at IS NOT NULL"
     "  FROM dlock.lease_store"
     " WHERE name OPERATOR(pg_catalog.=) $1",
     1,
     {TEXTOID}},
    // kInsert: first grant of a name. $1 name, $2 owner, $3 role,
    // $4 now, $5 expires_at, $6 ttl.
    {"INSERT INTO dlock.lease_store"
     "       (name, token, owner, acquired_by, acquired_at, expires_at, ttl)"
     " VALUES ($1, pg_catalog.nextval('dlock.token_seq'::pg_catalog.regclass),"
     "         $2, $3, $4, $5, $6)"
     " ON CONFLICT (name) DO NOTHING"
     " RETURNING token, acquired_at, expires_at",
     6,
     {TEXTOID, TEXTOID, NAMEOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
      INTERVALOID}},
    // kTake: grant a released or expired lease with a new token, drawn
    // after the row is locked. $7 is the token seen when deciding; a row
    // locked by another transaction is skipped, never waited for.
    {"UPDATE dlock.lease_store AS s"
     "   SET token = pg_catalog.nextval('dlock.token_seq'::pg_catalog.regclass),"
     "       owner = $2, acquired_by = $3, acquired_at = $4,"
     "       expires_at = $5, ttl = $6, released_at = NULL"
     " WHERE s.ctid OPERATOR(pg_catalog.=)"
     "       (SELECT l.ctid FROM dlock.lease_store AS l"
     "         WHERE l.name OPERATOR(pg_catalog.=) $1"
     "           AND l.token OPERATOR(pg_catalog.=) $7"
     "           FOR UPDATE SKIP LOCKED)"
     "   AND (s.released_at IS NOT NULL"
     "        OR s.expires_at OPERATOR(pg_catalog.<=) $4)"
     " RETURNING s.token, s.acquired_at, s.expires_at",
     7,
     {TEXTOID, TEXTOID, NAMEOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID,
      INT8OID}},
    // kExtend: the same owner acquires a lease it holds: same token,
    // later expiry. Arguments as kTake.
    {"UPDATE dlock.lease_store AS s"
     "   SET expires_at = $5, ttl = $6"
     " WHERE s.ctid OPERATOR(pg_catalog.=)"
     "       (SELECT l.ctid FROM dlock.lease_store AS l"
     "         WHERE l.name OPERATOR(pg_catalog.=) $1"
     "           AND l.token OPERATOR(pg_catalog.=) $7"
     "           FOR UPDATE SKIP LOCKED)"
     "   AND s.owner OPERATOR(pg_catalog.=) $2"
     "   AND s.released_at IS NULL"
     "   AND s.expires_at OPERATOR(pg_catalog.>) $4"
     " RETURNING s.token, s.acquired_at, s.expires_at",
     7,
     {TEXTOID, TEXTOID, NAMEOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID,
      INT8OID}},
    // kRenew: compare-and-set on (name, token). $3 now, $4 ttl or NULL to
    // keep the granted one.
    {"UPDATE dlock.lease_store"
     "   SET expires_at = $3 OPERATOR(pg_catalog.+)"
     "                    COALESCE($4, ttl),"
     "       ttl = COALESCE($4, ttl)"
     " WHERE name OPERATOR(pg_catalog.=) $1"
     "   AND token OPERATOR(pg_catalog.=) $2"
     "   AND released_at IS NULL"
     "   AND expires_at OPERATOR(pg_catalog.>) $3"
     " RETURNING token, owner, acquired_at, expires_at",
     4,
     {TEXTOID, INT8OID, TIMESTAMPTZOID, INTERVALOID}},
    // kRelease: compare-and-delete on (name, token); the row stays, marked
    // released, so its token history and state remain visible.
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

SPIPlanPtr plan(PlanId id) {
  if (saved_plans[id] == nullptr) {
    const PlanSpec& spec = kPlans[id];
    SPIPlanPtr p = SPI_prepare(spec.sql, spec.nargs,
                               const_cast<Oid*>(spec.types));
    if (p == nullptr) {
      elog(ERROR, "dlock: SPI_prepare failed: %s",
           SPI_result_code_string(SPI_result));
    }
    SPI_keepplan(p);
    saved_plans[id] = p;
  }
  return saved_plans[id];
}

// Runs a saved plan; nulls[i] is 'n' for a NULL argument, ' ' otherwise.
uint64 run(PlanId id, Datum* args, const char* nulls) {
  int rc = SPI_execute_plan(plan(id), args, nulls, false, 0);
  if (rc < 0) {
    elog(ERROR, "dlock: SPI_execute_plan failed: %s",
         SPI_result_code_string(rc));
  }
  return SPI_processed;
}

Datum column(int col, bool* isnull) {
  return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col,
                       isnull);
}

Datum column(int col) {
  bool isnull;
  return column(col, &isnull);
}

// dlock's queries run as the owner of dlock's tables, so callers need no
// privileges on them; the caller's own identity is recorded, not used.
struct Session {
  MemoryContext caller_cxt;
  Oid caller;
  Oid saved_user;
  int saved_sec_context;
};

Oid lease_store_owner() {
  Oid nsp = get_namespace_oid("dlock", false);
  Oid rel = get_relname_relid("lease_store", nsp);
  HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rel));
  if (!HeapTupleIsValid(tup)) elog(ERROR, "dlock: lease_store is missing");
  Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
  ReleaseSysCache(tup);
  return owner;
}

Session open_session() {
  Session s;
  s.caller_cxt = CurrentMemoryContext;
  GetUserIdAndSecContext(&s.saved_user, &s.saved_sec_context);
  s.caller = s.saved_user;
  Oid owner = lease_store_owner();
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "dlock: SPI_connect failed");
  SetUserIdAndSecContext(owner,
                         s.saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
  return s;
}

// On error, transaction or subtransaction abort restores the user and
// closes SPI, so this runs only on success.
void close_session(const Session& s) {
  SetUserIdAndSecContext(s.saved_user, s.saved_sec_context);
  SPI_finish();
}

// ---------------------------------------------------------------- leases

// A lease row read with kRead. owner lives in the current memory context,
// which is SPI's: copy it before close_session() if it must outlive it.
struct StoredLease {
  int64 token;
  const char* owner;
  TimestampTz acquired_at;
  TimestampTz expires_at;
  bool released;
};

std::optional<StoredLease> read_lease(const char* name) {
  Datum args[1] = {CStringGetTextDatum(name)};
  if (run(kRead, args, " ") == 0) return std::nullopt;
  StoredLease row;
  row.token = DatumGetInt64(column(1));
  row.owner = TextDatumGetCString(column(2));
  row.acquired_at = DatumGetTimestampTz(column(3));
  row.expires_at = DatumGetTimestampTz(column(4));
  row.released = DatumGetBool(column(5));
  return row;
}

std::optional<LeaseRow> rules_view(const std::optional<StoredLease>& row,
                                   const char* owner) {
  if (!row) return std::nullopt;
  return LeaseRow{row->token, row->expires_at, row->released,
                  owner != nullptr && strcmp(row->owner, owner) == 0};
}

// The lease's grant gate: an advisory lock in dlock's own key space, held
// to the end of a transaction that grants the lease. Grants of one name are
// serialised by it, so two transactions can never both create the same
// lease; a gate held by another transaction means a grant of this lease is
// in flight, and the caller does not wait.
LOCKTAG gate_tag(const char* name) {
  uint8 digest[32];
  pg_cryptohash_ctx* ctx = pg_cryptohash_create(PG_SHA256);
  if (pg_cryptohash_init(ctx) < 0 ||
      pg_cryptohash_update(ctx, reinterpret_cast<const uint8*>(name),
                           strlen(name)) < 0 ||
      pg_cryptohash_final(ctx, digest, sizeof digest) < 0) {
    elog(ERROR, "dlock: could not hash lease name: %s",
         pg_cryptohash_error(ctx));
  }
  pg_cryptohash_free(ctx);
  uint32 hi = (uint32(digest[0]) << 24) | (uint32(digest[1]) << 16) |
              (uint32(digest[2]) << 8) | digest[3];
  uint32 lo = (uint32(digest[4]) << 24) | (uint32(digest[5]) << 16) |
              (uint32(digest[6]) << 8) | digest[7];
  LOCKTAG tag;
  SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hi, lo, kGateKeySpace);
  return tag;
}

struct Granted {
  int64 token;
  TimestampTz acquired_at;
  TimestampTz expires_at;
};

// One acquisition attempt. Returns true and fills *out if granted. When
// busy, *holder_left is the time until the holder's expiry (0 if unknown).
// A busy lease costs one read: no WAL, no row lock.
bool attempt_grant(const Session& s, const Request& req, Granted* out,
                   Micros* holder_left) {
  std::optional<StoredLease> row = read_lease(req.name);
  Micros now = GetCurrentTimestamp();
  Grant grant = decide_grant(rules_view(row, req.owner), now);
  *holder_left = 0;
  if (grant == Grant::busy) {
    *holder_left = row->expires_at - now;
    return false;
  }
  LOCKTAG gate = gate_tag(req.name);
  if (LockAcquire(&gate, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL) {
    return false;
  }

  NameData role;
  namestrcpy(&role, GetUserNameFromId(s.caller, false));
  now = GetCurrentTimestamp();
  Datum args[7] = {
      CStringGetTextDatum(req.name),
      CStringGetTextDatum(req.owner),
      NameGetDatum(&role),
      TimestampTzGetDatum(now),
      TimestampTzGetDatum(now + req.ttl),
      IntervalPGetDatum(exact_interval(req.ttl)),
      Int64GetDatum(row ? row->token : 0),
  };
  PlanId id = grant == Grant::create     ? kInsert
              : grant == Grant::new_token ? kTake
                                          : kExtend;
  if (run(id, args, "       ") != 1) {
    // Lost a race (the row changed or is locked): nothing was granted, so
    // do not keep others from granting it for the rest of the transaction.
    LockRelease(&gate, ExclusiveLock, false);
    return false;
  }
  out->token = DatumGetInt64(column(1));
  out->acquired_at = DatumGetTimestampTz(column(2));
  out->expires_at = DatumGetTimestampTz(column(3));
  // A token once returned must never be handed out again, even after a
  // crash, so the grant commits with a WAL flush whatever
  // synchronous_commit says.
  ForceSyncCommit();
  return true;
}

// Builds a dlock.lease value; valid_for is measured now, on the server.
Datum lease_datum(FunctionCallInfo fcinfo, const char* name, const char* owner,
                  int64 token, TimestampTz acquired_at,
                  TimestampTz expires_at) {
  TupleDesc desc;
  if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE) {
    elog(ERROR, "dlock: function must return dlock.lease");
  }
  desc = BlessTupleDesc(desc);
  Micros left = expires_at - GetCurrentTimestamp();
  Datum values[6] = {
      CStringGetTextDatum(name),
      Int64GetDatum(token),
      CStringGetTextDatum(owner),
      TimestampTzGetDatum(acquired_at),
      TimestampTzGetDatum(expires_at),
      IntervalPGetDatum(exact_interval(left > 0 ? left : 0)),
  };
  bool nulls[6] = {false, false, false, false, false, false};
  return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

Datum granted_datum(FunctionCallInfo fcinfo, const Request& req,
                    const Granted& g) {
  return lease_datum(fcinfo, req.name, req.owner, g.token, g.acquired_at,
                     g.expires_at);
}

}  // namespace
}  // namespace dlock

using namespace dlock;

DLOCK_FUNCTION(dlock_try_acquire) {
  Request req = lease_request(fcinfo, 2);
  Session s = open_session();
  Granted g;
  Micros holder_left;
  bool granted = attempt_grant(s, req, &g, &holder_left);
  close_session(s);
  if (!granted) PG_RETURN_NULL();
  return granted_datum(fcinfo, req, g);
}

DLOCK_FUNCTION(dlock_acquire) {
  Request req = lease_request(fcinfo, 3);
  Micros timeout = check_timeout(
      interval_fields(required_interval(fcinfo, 2, "timeout")));
  if (IsolationUsesXactSnapshot()) {
    throw Error(sqlstate::feature_not_supported,
                "dlock.acquire() cannot wait in a REPEATABLE READ or "
                "SERIALIZABLE transaction",
                "The transaction's snapshot would never see the lease "
                "being released.",
                "Use dlock.try_acquire(), or call dlock.acquire() in a READ "
                "COMMITTED transaction.");
  }
  Micros deadline = GetCurrentTimestamp() + timeout;
  Backoff backoff(static_cast<uint64_t>(MyProcPid) ^
                  static_cast<uint64_t>(GetCurrentTimestamp()));
  Granted g;
  for (;;) {
    // One SPI connection per attempt: closing it frees what the attempt
    // allocated, however long the wait.
    Session s = open_session();
    Micros holder_left;
    bool granted = attempt_grant(s, req, &g, &holder_left);
    close_session(s);
    if (granted) break;
    Micros now = GetCurrentTimestamp();
    if (now >= deadline) {
      throw Error(sqlstate::lock_not_available,
                  std::string("could not acquire lease \"") + req.name +
                      "\" within the timeout",
                  "Waited " + std::to_string(timeout / 1000) + " ms.");
    }
    Micros sleep = backoff.next_sleep(holder_left, deadline - now);
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                    static_cast<long>((sleep + 999) / 1000),
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
  }
  return granted_datum(fcinfo, req, g);
}

DLOCK_FUNCTION(dlock_renew) {
  const char* name = required_text(fcinfo, 0, "lease name");
  check_name(name);
  int64 token = required_token(fcinfo, 1);
  bool keep_ttl = PG_ARGISNULL(2);
  Micros ttl = keep_ttl ? 0
                        : check_ttl(interval_fields(PG_GETARG_INTERVAL_P(2)),
                                    max_ttl());
  Session s = open_session();
  Micros now = GetCurrentTimestamp();
  Datum args[4] = {CStringGetTextDatum(name), Int64GetDatum(token),
                   TimestampTzGetDatum(now),
                   keep_ttl ? Datum(0) : IntervalPGetDatum(exact_interval(ttl))};
  if (run(kRenew, args, keep_ttl ? "   n" : "    ") == 1) {
    const char* owner =
        MemoryContextStrdup(s.caller_cxt, TextDatumGetCString(column(2)));
    TimestampTz acquired_at = DatumGetTimestampTz(column(3));
    TimestampTz expires_at = DatumGetTimestampTz(column(4));
    ForceSyncCommit();
    close_session(s);
    return lease_datum(fcinfo, name, owner, token, acquired_at, expires_at);
  }
  std::optional<StoredLease> row = read_lease(name);
  NotHeld why = why_not_held(rules_view(row, nullptr), token, now);
  close_session(s);
  throw Error(sqlstate::lease_not_held,
              std::string("lease \"") + name + "\" is not held with token " +
                  std::to_string(token),
              std::string(describe(why)) +
                  (row ? "; its latest token is " + std::to_string(row->token)
                       : std::string()) +
                  ".",
              "Acquire the lease again; work done under the old token may "
              "have overlapped with another holder.");
}

DLOCK_FUNCTION(dlock_release) {
  const char* name = required_text(fcinfo, 0, "lease name");
  check_name(name);
  int64 token = required_token(fcinfo, 1);
  Session s = open_session();
  bool first_write = !TransactionIdIsValid(GetTopTransactionIdIfAny());
  Datum args[3] = {CStringGetTextDatum(name), Int64GetDatum(token),
                   TimestampTzGetDatum(GetCurrentTimestamp())};
  bool released = run(kRelease, args, "   ") == 1;
  if (released) note_release_write(first_write);
  close_session(s);
  PG_RETURN_BOOL(released);
}

DLOCK_FUNCTION(dlock_get) {
  const char* name = required_text(fcinfo, 0, "lease name");
  check_name(name);
  Session s = open_session();
  std::optional<StoredLease> row = read_lease(name);
  Micros now = GetCurrentTimestamp();
  if (row) row->owner = MemoryContextStrdup(s.caller_cxt, row->owner);
  close_session(s);
  if (!row || !is_held(*rules_view(row, nullptr), now)) PG_RETURN_NULL();
  return lease_datum(fcinfo, name, row->owner, row->token, row->acquired_at,
                     row->expires_at);
}

DLOCK_FUNCTION(dlock_default_owner) {
  PG_RETURN_TEXT_P(cstring_to_text(default_owner()));
}
