// Advisory-lock helpers: dlock.key(), dlock.advisory_lock() and
// dlock.advisory_unlock(). They use PostgreSQL's own advisory locks on the
// bigint key dlock.key(name), so they interoperate with
// pg_advisory_lock(dlock.key(name)). Plain frames only (see boundary.h).

#include "../core/advisory_key.h"
#include "../core/arguments.h"
#include "../core/duration.h"
#include "../core/errors.h"

#include "args.h"
#include "boundary.h"
#include "intervals.h"
#include "spi.h"

namespace dlock::pg {
namespace {

// The name behind an advisory key, for the views; writes nothing when the
// key is already known.
SavedPlan remember_name = {
    "INSERT INTO dlock.advisory_names (key, name) VALUES ($1, $2)"
    " ON CONFLICT (key) DO NOTHING",
    2,
    {INT8OID, TEXTOID},
    nullptr};

// dlock.key(name): SHA-256 of the name's UTF-8 bytes (see advisory.h).
int64 name_key(const char* name) {
  const char* utf8 =
      pg_server_to_any(name, static_cast<int>(strlen(name)), PG_UTF8);
  uint8 digest[PG_SHA256_DIGEST_LENGTH];
  pg_cryptohash_ctx* ctx = pg_cryptohash_create(PG_SHA256);
  if (pg_cryptohash_init(ctx) < 0 ||
      pg_cryptohash_update(ctx, reinterpret_cast<const uint8*>(utf8),
                           strlen(utf8)) < 0 ||
      pg_cryptohash_final(ctx, digest, sizeof digest) < 0) {
    elog(ERROR, "dlock: could not compute SHA-256: %s",
         pg_cryptohash_error(ctx));
  }
  pg_cryptohash_free(ctx);
  return dlock::key_from_sha256(digest);
}

// The tag pg_advisory_lock(bigint) uses for this key.
LOCKTAG advisory_tag(int64 key) {
  KeyHalves halves = dlock::split_key(key);
  LOCKTAG tag;
  SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, halves.high, halves.low, 1);
  return tag;
}

// Runs fn(arg) in an internal subtransaction (as PL/pgSQL's exception
// blocks do) with lock_timeout = timeout_ms. Returns false, with the
// subtransaction rolled back, if a lock wait timed out; any other error is
// re-raised.
bool within_lock_timeout(int timeout_ms, void (*fn)(void*) noexcept,
                         void* arg) {
  MemoryContext cxt = CurrentMemoryContext;
  ResourceOwner owner = CurrentResourceOwner;
  volatile bool done = false;
  char setting[32];
  snprintf(setting, sizeof setting, "%d", timeout_ms);

  BeginInternalSubTransaction(nullptr);
  MemoryContextSwitchTo(cxt);
  PG_TRY();
  {
    // Saved and restored around the call, like a function's SET clause.
    int nest_level = NewGUCNestLevel();
    (void)set_config_option("lock_timeout", setting, PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    fn(arg);
    AtEOXact_GUC(true, nest_level);
    ReleaseCurrentSubTransaction();
    done = true;
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(cxt);
    ErrorData* error = CopyErrorData();
    FlushErrorState();
    RollbackAndReleaseCurrentSubTransaction();
    MemoryContextSwitchTo(cxt);
    CurrentResourceOwner = owner;
    if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE) ReThrowError(error);
    FreeErrorData(error);
  }
  PG_END_TRY();
  MemoryContextSwitchTo(cxt);
  CurrentResourceOwner = owner;
  return done;
}

struct LockRequest {
  const LOCKTAG* tag;
  LOCKMODE mode;
  bool session;
};
DLOCK_PLAIN_STRUCT(LockRequest);

void take_lock(void* arg) noexcept {
  LockRequest* req = static_cast<LockRequest*>(arg);
  (void)LockAcquire(req->tag, req->mode, req->session, false);
}

struct NamedKey {
  int64 key;
  const char* name;
};
DLOCK_PLAIN_STRUCT(NamedKey);

// Remembers which name an advisory key was taken for. Only where writing
// it cannot fail: not read-only, not on a standby, and not under a
// transaction snapshot, where a concurrent first use of the name would be a
// serialization failure.
void record_name(void* arg) noexcept {
  if (XactReadOnly || RecoveryInProgress() || IsolationUsesXactSnapshot()) {
    return;
  }
  NamedKey* named = static_cast<NamedKey*>(arg);
  OwnerSpi spi = owner_spi_connect();
  Datum args[2] = {Int64GetDatum(named->key), CStringGetTextDatum(named->name)};
  run_plan(remember_name, args, "  ");
  owner_spi_finish(spi);
}

}  // namespace

// dlock.key(name text) RETURNS bigint, STRICT IMMUTABLE.
DLOCK_FUNCTION(dlock_key) {
  // Any non-empty name: only its hash is used.
  const char* name = text_to_cstring(PG_GETARG_TEXT_PP(0));
  if (name[0] == '\0') {
    throw_error(sqlstate::invalid_parameter_value, "name must not be empty");
  }
  PG_RETURN_INT64(name_key(name));
}

// dlock.advisory_lock(name text, timeout interval, shared boolean,
//                     xact boolean) RETURNS boolean
DLOCK_FUNCTION(dlock_advisory_lock) {
  // Names are kept for the views: at most 255 bytes, like a lease name.
  const char* name = required_name(fcinfo, 0, "name");
  bool wait_forever = PG_ARGISNULL(1);
  Micros timeout =
      wait_forever
          ? 0
          : dlock::check_timeout(interval_fields(PG_GETARG_INTERVAL_P(1)));
  require(fcinfo, 2, "shared");
  require(fcinfo, 3, "xact");
  LOCKMODE mode = PG_GETARG_BOOL(2) ? ShareLock : ExclusiveLock;
  bool session = !PG_GETARG_BOOL(3);
  // lock_timeout counts whole milliseconds, and 0 would mean "no limit".
  Micros timeout_ms = (timeout + 999) / 1000;
  if (!wait_forever && timeout_ms > INT_MAX) {
    throw_error(sqlstate::invalid_parameter_value, "timeout is too long",
                psprintf("The limit is %d ms.", INT_MAX));
  }

  // Record the name for the views without ever waiting for it: another
  // transaction recording the same name right now would wait us out, and
  // it records the same name anyway.
  int64 key = name_key(name);
  NamedKey named{key, name};
  (void)within_lock_timeout(1, record_name, &named);

  LOCKTAG tag = advisory_tag(key);
  if (wait_forever) {
    (void)LockAcquire(&tag, mode, session, false);
    PG_RETURN_BOOL(true);
  }
  if (timeout_ms == 0) {
    PG_RETURN_BOOL(LockAcquire(&tag, mode, session, true) !=
                   LOCKACQUIRE_NOT_AVAIL);
  }
  bool held_before = compat::lock_held_by_me(&tag, mode);
  LockRequest request{&tag, mode, session};
  if (within_lock_timeout(static_cast<int>(timeout_ms), take_lock, &request)) {
    PG_RETURN_BOOL(true);
  }
  // A lock granted just as the wait timed out stays granted to a session
  // (a subtransaction's abort releases only transaction locks): give it
  // back, so that false always means "not held".
  if (session && !held_before && compat::lock_held_by_me(&tag, mode)) {
    LockRelease(&tag, mode, true);
  }
  PG_RETURN_BOOL(false);
}

// dlock.advisory_unlock(name text, shared boolean) RETURNS boolean
DLOCK_FUNCTION(dlock_advisory_unlock) {
  const char* name = required_name(fcinfo, 0, "name");
  require(fcinfo, 1, "shared");
  LOCKTAG tag = advisory_tag(name_key(name));
  PG_RETURN_BOOL(
      LockRelease(&tag, PG_GETARG_BOOL(1) ? ShareLock : ExclusiveLock, true));
}

}  // namespace dlock::pg
