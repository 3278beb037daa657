// SQL-callable lease functions: try_acquire, acquire, renew, release, get,
// default_owner. The rules live in src/core, table access in lease_store;
// this file reads arguments, applies the rules and builds results.
//
// Every frame here owns only trivially destructible values, so it may call
// PostgreSQL directly (see boundary.h).
#include <type_traits>

#include "../core/backoff.h"
#include "../core/errors.h"
#include "../core/fencing.h"
#include "../core/lease_rules.h"

// PostgreSQL headers only after the core ones.
#include "args.h"
#include "boundary.h"
#include "lease_store.h"
#include "module.h"

namespace dlock {
namespace {

// ---------------------------------------------------------------- arguments

struct Request {
  const char* name;
  const char* owner;
  Micros ttl;
  Micros lock_delay;  // 0: none
  Micros max_hold;    // 0: none
};
static_assert(std::is_trivially_destructible_v<Request>);
static_assert(std::is_trivially_destructible_v<Backoff>);
static_assert(std::is_trivially_destructible_v<std::optional<LeaseRow>>);

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

std::optional<IntervalFields> optional_interval(FunctionCallInfo fcinfo,
                                                int arg) {
  if (PG_NARGS() <= arg || PG_ARGISNULL(arg)) return std::nullopt;
  return interval_fields(PG_GETARG_INTERVAL_P(arg));
}

// try_acquire(name, ttl, owner, lock_delay, max_hold) and acquire(name,
// ttl, timeout, owner, lock_delay, max_hold): owner_argno is owner's place.
Request lease_request(FunctionCallInfo fcinfo, int owner_argno) {
  Request req;
  req.name = required_text(fcinfo, 0, "lease name");
  check_name(req.name);
  req.ttl = check_ttl(interval_fields(required_interval(fcinfo, 1, "ttl")),
                      max_ttl());
  req.owner = owner_arg(fcinfo, owner_argno);
  req.lock_delay = check_optional_duration(
      optional_interval(fcinfo, owner_argno + 1), "lock_delay", max_ttl());
  req.max_hold = check_optional_duration(
      optional_interval(fcinfo, owner_argno + 2), "max_hold", max_ttl());
  return req;
}

Interval* exact_interval(Micros us) {
  Interval* iv = static_cast<Interval*>(palloc0(sizeof(Interval)));
  iv->time = us;
  return iv;
}

// dlock's administrators: members of role dlock_admin, and superusers.
bool is_dlock_admin() {
  if (superuser()) return true;
  Oid admin = get_role_oid("dlock_admin", true);
  return OidIsValid(admin) && has_privs_of_role(GetUserId(), admin);
}

// A lease belongs to the role that acquired it: that role, roles with its
// privileges (its members) and dlock's administrators may act on it.
bool may_act_for(const char* role_name) {
  if (role_name == nullptr) return is_dlock_admin();
  Oid role = get_role_oid(role_name, true);
  if (OidIsValid(role) && has_privs_of_role(GetUserId(), role)) return true;
  return is_dlock_admin();
}

// 42501 unless the caller may act on the grant it names by token.
void check_may_act(const char* name, int64 token,
                   const std::optional<StoredLease>& row) {
  if (!row || row->token != token || may_act_for(row->acquired_by)) return;
  throw Error(sqlstate::insufficient_privilege,
              std::string("lease \"") + name + "\" belongs to role \"" +
                  row->acquired_by + "\"",
              {},
              "Only that role, its members and members of dlock_admin may "
              "renew, release or assert it.");
}

std::optional<LeaseRow> rules_view(const std::optional<StoredLease>& row,
                                   const char* owner) {
  if (!row) return std::nullopt;
  // The same owner name under a role that may not act for the lease's role
  // is another owner.
  bool same_owner = owner != nullptr && strcmp(row->owner, owner) == 0 &&
                    may_act_for(row->acquired_by);
  return LeaseRow{row->token, row->expires_at, row->released, same_owner,
                  row->lock_delay};
}

// ---------------------------------------------------------------- leases

// Raises LD002 for a token that does not hold its lease, or LD003 if dlock
// never issued it at all.
[[noreturn]] void raise_not_held(const char* name, int64 token,
                                 const std::optional<StoredLease>& row,
                                 NotHeld why) {
  if (why == NotHeld::never_granted) {
    check_token_issued(token, last_issued_token());
  }
  if (log_grants) {
    ereport(LOG, (errmsg_internal("dlock: lease \"%s\" is not held with "
                                  "token %lld: %s",
                                  name, static_cast<long long>(token),
                                  describe(why))));
  }
  bool forced = why == NotHeld::released && row && row->forced_by != nullptr;
  std::string reason =
      forced ? std::string("The lease was force-released by ") +
                   row->forced_by + ": " + row->force_reason
             : std::string(describe(why));
  throw Error(sqlstate::lease_not_held,
              std::string("lease \"") + name + "\" is not held with token " +
                  std::to_string(token),
              reason +
                  (row ? "; its latest token is " + std::to_string(row->token)
                       : std::string()) +
                  ".",
              why == NotHeld::never_granted
                  ? "Use the token the lease was granted with."
                  : "Acquire the lease again; work done under this token may "
                    "have overlapped with another holder.");
}

struct Granted {
  int64 token;
  TimestampTz acquired_at;
  TimestampTz expires_at;
};

// One acquisition attempt. Returns true and fills *out if granted. When
// busy, *holder_left is the time until the holder's expiry (0 if unknown).
// A lease held by another owner costs one index read: no WAL, no row lock.
bool attempt_grant(const Request& req, Granted* out, Micros* holder_left) {
  std::optional<StoredLease> row = read_lease(req.name);
  Micros now = GetCurrentTimestamp();
  *holder_left = 0;
  if (decide_grant(rules_view(row, req.owner), now) == Grant::busy) {
    *holder_left = free_at(*rules_view(row, req.owner)) - now;
    return false;
  }
  LOCKTAG gate = gate_tag(req.name);
  if (!try_gate(gate)) return false;

  // Decided again when writing, on the row version written: the lease may
  // have changed between the read and the gate, and time has passed.
  GrantWrite kind;
  GrantTerms terms;
  for (;;) {
    now = GetCurrentTimestamp();
    Grant grant = decide_grant(rules_view(row, req.owner), now);
    if (grant == Grant::busy) {
      // Nothing was granted, so do not keep others from the lease for the
      // rest of the transaction.
      release_gate(gate);
      return false;
    }
    kind = grant == Grant::create      ? GrantWrite::create
           : grant == Grant::new_token ? GrantWrite::take
                                       : GrantWrite::extend;
    // A retry of a held grant keeps that grant's start and max_hold.
    bool extend = kind == GrantWrite::extend;
    terms.now = now;
    terms.expires_at =
        extend ? capped_expiry(now, req.ttl, row->acquired_at, row->max_hold)
               : capped_expiry(now, req.ttl, now, req.max_hold);
    terms.ttl = exact_interval(req.ttl);
    terms.lock_delay = exact_interval(req.lock_delay);
    terms.max_hold = req.max_hold > 0 ? exact_interval(req.max_hold) : nullptr;
    if (write_grant(kind, req.name, row ? &*row : nullptr, req.owner, terms,
                    &out->token) == RowWrite::written) {
      break;
    }
    CHECK_FOR_INTERRUPTS();
    row = read_lease(req.name);
  }
  bool extend = kind == GrantWrite::extend;
  out->acquired_at = extend ? row->acquired_at : now;
  out->expires_at = terms.expires_at;
  if (log_grants) {
    if (kind == GrantWrite::take && !row->released) {
      ereport(LOG, (errmsg_internal(
                       "dlock: lease \"%s\" taken over by owner \"%s\" with "
                       "token %lld after token %lld of owner \"%s\" expired",
                       req.name, req.owner, static_cast<long long>(out->token),
                       static_cast<long long>(row->token), row->owner)));
    } else {
      ereport(LOG, (errmsg_internal(
                       "dlock: lease \"%s\" %s owner \"%s\" with token %lld",
                       req.name, extend ? "extended for" : "granted to",
                       req.owner, static_cast<long long>(out->token))));
    }
  }
  // A token once returned must never be handed out again, even after a
  // crash or a failover: the grant commits durably whatever the session's
  // synchronous_commit says.
  commit_durably();
  return true;
}

// Whether row is the lease held with token at now.
bool held_with(const std::optional<StoredLease>& row, int64 token,
               TimestampTz now) {
  return row && row->token == token && is_held(*rules_view(row, nullptr), now);
}

// Compare-and-delete of (name, token), with the lease's gate held; `row` is
// the lease as read before or after taking the gate. On success,
// *acquired_at tells how long the lease was held.
bool release_gated(const char* name, int64 token,
                   std::optional<StoredLease> row, TimestampTz* acquired_at) {
  for (;;) {
    TimestampTz now = GetCurrentTimestamp();
    if (!held_with(row, token, now)) return false;
    if (write_release(*row, now) == RowWrite::written) {
      *acquired_at = row->acquired_at;
      return true;
    }
    CHECK_FOR_INTERRUPTS();
    row = read_lease(name);
  }
}

// Builds a dlock.lease value; valid_for is measured now, on the server.
Datum lease_datum(FunctionCallInfo fcinfo, const char* name, const char* owner,
                  int64 token, TimestampTz acquired_at,
                  TimestampTz expires_at) {
  // The row type is looked up once per call site (fn_extra lives as long as
  // the calling query's FmgrInfo).
  FmgrInfo* flinfo = fcinfo->flinfo;
  if (flinfo->fn_extra == nullptr) {
    TupleDesc found;
    if (get_call_result_type(fcinfo, nullptr, &found) != TYPEFUNC_COMPOSITE) {
      elog(ERROR, "dlock: function must return dlock.lease");
    }
    MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);
    flinfo->fn_extra = BlessTupleDesc(CreateTupleDescCopy(found));
    MemoryContextSwitchTo(old);
  }
  TupleDesc desc = static_cast<TupleDesc>(flinfo->fn_extra);
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
  PreventCommandIfReadOnly("dlock.try_acquire()");
  Granted g;
  Micros holder_left;
  if (!attempt_grant(req, &g, &holder_left)) PG_RETURN_NULL();
  return granted_datum(fcinfo, req, g);
}

DLOCK_FUNCTION(dlock_acquire) {
  Request req = lease_request(fcinfo, 3);
  Micros timeout = check_timeout(
      interval_fields(required_interval(fcinfo, 2, "timeout")));
  PreventCommandIfReadOnly("dlock.acquire()");
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
  // Each attempt's allocations go to a context reset before the next, so
  // a long wait does not accumulate memory.
  MemoryContext attempt_cxt = AllocSetContextCreate(
      CurrentMemoryContext, "dlock acquire attempt", ALLOCSET_SMALL_SIZES);
  MemoryContext call_cxt = MemoryContextSwitchTo(attempt_cxt);
  Granted g;
  Micros holder_left;
  // While it waits, the session holds a shared lock in dlock's "waiting"
  // key space, so that dlock.lock_waits can show who waits for which lease.
  LOCKTAG waiting = waiting_tag(req.name);
  bool advertised = false;
  while (!attempt_grant(req, &g, &holder_left)) {
    MemoryContextReset(attempt_cxt);
    if (!advertised) {
      (void)LockAcquire(&waiting, ShareLock, false, false);
      advertised = true;
    }
    Micros now = GetCurrentTimestamp();
    if (now >= deadline) {
      throw Error(sqlstate::lock_not_available,
                  std::string("could not acquire lease \"") + req.name +
                      "\" within the timeout",
                  "Waited " + describe_duration(timeout) + ".");
    }
    Micros sleep = backoff.next_sleep(holder_left, deadline - now);
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                    static_cast<long>((sleep + 999) / 1000),
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
  }
  if (advertised) LockRelease(&waiting, ShareLock, false);
  MemoryContextSwitchTo(call_cxt);
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
  PreventCommandIfReadOnly("dlock.renew()");
  wait_gate(name);
  std::optional<StoredLease> row = read_lease(name);
  for (;;) {
    check_may_act(name, token, row);
    TimestampTz now = GetCurrentTimestamp();
    NotHeld why = why_not_held(rules_view(row, nullptr), token, now);
    if (why != NotHeld::held) raise_not_held(name, token, row, why);
    // The lease's current TTL, still within today's dlock.max_ttl.
    if (keep_ttl) ttl = check_ttl(interval_fields(row->ttl), max_ttl());
    // Never past the grant's max_hold.
    TimestampTz expires_at =
        capped_expiry(now, ttl, row->acquired_at, row->max_hold);
    if (write_renew(*row, expires_at, exact_interval(ttl)) ==
        RowWrite::written) {
      commit_durably();  // like a grant: see attempt_grant()
      return lease_datum(fcinfo, name, row->owner, token, row->acquired_at,
                         expires_at);
    }
    CHECK_FOR_INTERRUPTS();
    row = read_lease(name);
  }
}

DLOCK_FUNCTION(dlock_assert_held) {
  const char* name = required_text(fcinfo, 0, "lease name");
  check_name(name);
  int64 token = required_token(fcinfo, 1);
  // Shares the gate with other asserts; grants, renewals and releases of
  // the lease wait for (or, for grants, give up on) this transaction.
  LOCKTAG gate = gate_tag(name);
  (void)LockAcquire(&gate, ShareLock, false, false);
  Writer w = open_writer();
  std::optional<StoredLease> row = read_lease_for_share(name);
  if (row) {
    row->owner = MemoryContextStrdup(w.caller_cxt, row->owner);
    row->acquired_by = MemoryContextStrdup(w.caller_cxt, row->acquired_by);
    if (row->forced_by) {
      row->forced_by = MemoryContextStrdup(w.caller_cxt, row->forced_by);
      row->force_reason = MemoryContextStrdup(w.caller_cxt, row->force_reason);
    }
  }
  close_writer(w);
  check_may_act(name, token, row);
  NotHeld why = why_not_held(rules_view(row, nullptr), token,
                             GetCurrentTimestamp());
  if (why == NotHeld::held) PG_RETURN_VOID();
  if (why == NotHeld::newer_token) {
    throw Error(sqlstate::stale_token,
                std::string("fencing token ") + std::to_string(token) +
                    " is stale for lease \"" + name + "\"",
                "The lease was taken by token " + std::to_string(row->token) +
                    ".",
                "Stop writing: another holder owns the lease now.");
  }
  raise_not_held(name, token, row, why);
}

DLOCK_FUNCTION(dlock_release) {
  const char* name = required_text(fcinfo, 0, "lease name");
  check_name(name);
  int64 token = required_token(fcinfo, 1);
  PreventCommandIfReadOnly("dlock.release()");
  bool first_write = !TransactionIdIsValid(GetTopTransactionIdIfAny());
  // Judged before taking the gate: a release that cannot succeed (wrong
  // token, not held) must not hold the gate, or any role could keep the
  // holder from renewing by releasing with a wrong token in an open
  // transaction.
  std::optional<StoredLease> row = read_lease(name);
  if (!held_with(row, token, GetCurrentTimestamp())) PG_RETURN_BOOL(false);
  check_may_act(name, token, row);
  wait_gate(name);
  TimestampTz acquired_at;
  bool released = release_gated(name, token, row, &acquired_at);
  if (released) {
    note_release_write(first_write);
    if (log_grants) {
      ereport(LOG, (errmsg_internal(
                       "dlock: lease \"%s\" released with token %lld after "
                       "%lld ms",
                       name, static_cast<long long>(token),
                       static_cast<long long>(
                           (GetCurrentTimestamp() - acquired_at) / 1000))));
    }
  }
  PG_RETURN_BOOL(released);
}

// dlock.force_release(name text, reason text) RETURNS dlock.lease
DLOCK_FUNCTION(dlock_force_release) {
  const char* name = required_text(fcinfo, 0, "lease name");
  check_name(name);
  const char* reason = required_text(fcinfo, 1, "reason");
  PreventCommandIfReadOnly("dlock.force_release()");
  wait_gate(name);
  Writer w = open_writer();
  TimestampTz now = GetCurrentTimestamp();
  const char* by = GetUserNameFromId(w.saved_user, false);
  StoredLease ended;
  bool forced = write_force_release(name, now, by, reason, &ended) == 1;
  if (forced) ended.owner = MemoryContextStrdup(w.caller_cxt, ended.owner);
  close_writer(w);
  if (!forced) PG_RETURN_NULL();
  ereport(log_grants ? LOG : DEBUG1,
          (errmsg_internal("dlock: lease \"%s\" of owner \"%s\" (token "
                           "%lld) force-released by %s after %lld ms: %s",
                           name, ended.owner,
                           static_cast<long long>(ended.token), by,
                           static_cast<long long>((now - ended.acquired_at) /
                                                  1000),
                           reason)));
  return lease_datum(fcinfo, name, ended.owner, ended.token, ended.acquired_at,
                     ended.expires_at);
}

// dlock.release_all(owner text) RETURNS integer: the caller's role's leases
// held by owner (any role's for dlock_admin).
DLOCK_FUNCTION(dlock_release_all) {
  const char* owner = required_text(fcinfo, 0, "owner");
  if (owner[0] == '\0') {
    throw Error(sqlstate::invalid_parameter_value,
                "owner must not be empty");
  }
  check_owner(owner);
  PreventCommandIfReadOnly("dlock.release_all()");
  TimestampTz now = GetCurrentTimestamp();
  Writer w = open_writer();
  char** names;
  int64* tokens;
  char** roles;
  int n = held_by_owner(owner, now, w.caller_cxt, &names, &tokens, &roles);
  close_writer(w);
  // Only the leases the caller may act for (see may_act_for), judged as
  // the caller.
  bool* mine = static_cast<bool*>(palloc0(sizeof(bool) * (n + 1)));
  for (int i = 0; i < n; ++i) mine[i] = may_act_for(roles[i]);
  int released = 0;
  for (int i = 0; i < n; ++i) {
    if (!mine[i]) continue;
    wait_gate(names[i]);
    TimestampTz acquired_at;
    released += release_gated(names[i], tokens[i], read_lease(names[i]),
                              &acquired_at);
  }
  PG_RETURN_INT32(released);
}

// dlock.sweep(older_than interval) RETURNS bigint: deletes lease rows
// released, or expired past their lock-delay, more than older_than ago.
// Rows being written right now (gate taken) are left for the next sweep.
DLOCK_FUNCTION(dlock_sweep) {
  Micros older_than = duration(
      interval_fields(required_interval(fcinfo, 0, "older_than")),
      "older_than");
  if (older_than < 0) {
    throw Error(sqlstate::invalid_parameter_value,
                "older_than must not be negative");
  }
  PreventCommandIfReadOnly("dlock.sweep()");
  constexpr int kBatch = 10000;  // gates held until commit: bound them
  TimestampTz before = GetCurrentTimestamp() - older_than;
  Writer w = open_writer();
  char** names;
  int n = sweepable(before, kBatch, &names);
  int64 deleted = 0;
  for (int i = 0; i < n; ++i) {
    LOCKTAG gate = gate_tag(names[i]);
    if (!try_gate(gate)) continue;
    deleted += static_cast<int64>(delete_swept(names[i], before));
  }
  close_writer(w);
  PG_RETURN_INT64(deleted);
}

DLOCK_FUNCTION(dlock_get) {
  const char* name = required_text(fcinfo, 0, "lease name");
  check_name(name);
  std::optional<StoredLease> row = read_lease(name);
  if (!row || !is_held(*rules_view(row, nullptr), GetCurrentTimestamp())) {
    PG_RETURN_NULL();
  }
  return lease_datum(fcinfo, name, row->owner, row->token, row->acquired_at,
                     row->expires_at);
}

DLOCK_FUNCTION(dlock_default_owner) {
  PG_RETURN_TEXT_P(cstring_to_text(default_owner()));
}
