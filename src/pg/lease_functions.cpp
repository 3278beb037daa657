// SQL-callable lease functions: try_acquire, acquire, renew, release, get
// and assert_held. The rules live in src/core; this file reads arguments,
// applies them through grant.h and release.h, and builds results.

#include <optional>

#include "../core/arguments.h"
#include "../core/deadline.h"
#include "../core/duration.h"
#include "../core/errors.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"
#include "../core/lease_stats.h"
#include "../core/tokens.h"

#include "args.h"
#include "authorization.h"
#include "boundary.h"
#include "durability.h"
#include "gate.h"
#include "grant.h"
#include "holder_rows.h"
#include "intervals.h"
#include "lease_queue.h"
#include "lease_row.h"
#include "lease_value.h"
#include "relations.h"
#include "release.h"
#include "settings.h"
#include "stats.h"
#include "tokens.h"

namespace dlock::pg {
namespace {

DLOCK_PLAIN_STRUCT(std::optional<LeaseRow>);

// Raises LD002 for a token that does not hold its lease, or LD003 if dlock
// never issued it at all.
[[noreturn]] void raise_not_held(const char* name, int64 token,
                                 const std::optional<LeaseRow>& row,
                                 NotHeld why) {
  if (why == NotHeld::never_granted) {
    dlock::check_token_issued(token, last_issued_token());
  }
  if (log_grants) {
    ereport(LOG, (errmsg_internal("dlock: lease \"%s\" is not held with "
                                  "token %lld: %s",
                                  name, static_cast<long long>(token),
                                  dlock::describe(why))));
  }
  bool forced = why == NotHeld::released && row && row->forced_by != nullptr;
  int64 latest = latest_token(name);
  const char* reason = forced
                           ? psprintf("The lease was force-released by %s: %s",
                                      row->forced_by, row->force_reason)
                           : dlock::describe(why);
  throw_error(sqlstate::lease_not_held,
              psprintf("lease \"%s\" is not held with token %lld", name,
                       static_cast<long long>(token)),
              latest > 0 ? psprintf("%s; its latest token is %lld.", reason,
                                    static_cast<long long>(latest))
                         : psprintf("%s.", reason),
              why == NotHeld::never_granted
                  ? "Use the token the lease was granted with."
                  : "Acquire the lease again; work done under this token may "
                    "have overlapped with another holder.");
}

// LD002 for renew(..., owner => ...) naming an owner that is not the
// grant's: a token is a capability, and the owner check keeps a client
// from using a token it was never granted.
[[noreturn]] void raise_other_owner(const char* name, int64 token,
                                    const char* owner) {
  throw_error(sqlstate::lease_not_held,
              psprintf("lease \"%s\" is not held with token %lld by owner "
                       "\"%s\"",
                       name, static_cast<long long>(token), owner),
              "Another owner holds the lease with this token.",
              "Use the token of your own grant.");
}

Datum granted_value(FunctionCallInfo fcinfo, const LeaseRequest& req,
                    const Granted& g) {
  return lease_value(fcinfo, req.name, req.owner, g.token, g.acquired_at,
                     g.expires_at);
}

}  // namespace

DLOCK_FUNCTION(dlock_try_acquire) {
  LeaseRequest req = lease_request(fcinfo, 2);
  PreventCommandIfReadOnly("dlock.try_acquire()");
  Granted g;
  Micros free_in;
  if (attempt_grant(req, kOutsideQueue, &g, &free_in) != Attempt::granted) {
    count_event(req.name, dlock::LeaseEvent::busy);
    PG_RETURN_NULL();
  }
  return granted_value(fcinfo, req, g);
}

DLOCK_FUNCTION(dlock_acquire) {
  LeaseRequest req = lease_request(fcinfo, 3);
  Micros timeout = dlock::check_timeout(
      interval_fields(required_interval(fcinfo, 2, "timeout")));
  PreventCommandIfReadOnly("dlock.acquire()");
  refuse_waits_in_snapshot("dlock.acquire()", "dlock.try_acquire()");
  Granted g;
  if (!acquire_until(req, Deadline::after(dlock::monotonic_now(), timeout),
                     &g)) {
    raise_timed_out(req.name, timeout);
  }
  return granted_value(fcinfo, req, g);
}

DLOCK_FUNCTION(dlock_renew) {
  const char* name = required_name(fcinfo, 0, "lease name");
  int64 token = required_token(fcinfo, 1);
  bool keep_ttl = PG_ARGISNULL(2);
  Micros ttl = keep_ttl
                   ? 0
                   : dlock::check_ttl(interval_fields(PG_GETARG_INTERVAL_P(2)),
                                      max_ttl());
  const char* owner = optional_owner(fcinfo, 3);
  PreventCommandIfReadOnly("dlock.renew()");
  wait_gate(name);
  std::optional<LeaseRow> row = read_grant(name, token);
  for (;;) {
    check_may_act(name, token, row);
    TimestampTz now = GetCurrentTimestamp();
    dlock::NotHeld why = dlock::why_not_held(
        row ? std::optional(grant_of(*row)) : std::nullopt, token, now);
    if (why != dlock::NotHeld::held) {
      count_event(name, dlock::LeaseEvent::renew_failure);
      raise_not_held(name, token, row, why);
    }
    if (owner != nullptr && strcmp(owner, row->owner) != 0) {
      count_event(name, dlock::LeaseEvent::renew_failure);
      raise_other_owner(name, token, owner);
    }
    // The lease's current TTL, still within today's dlock.max_ttl.
    if (keep_ttl) ttl = dlock::check_ttl(interval_fields(row->ttl), max_ttl());
    // Never past the grant's max_hold.
    TimestampTz expires_at =
        dlock::capped_expiry(now, ttl, row->acquired_at, row->max_hold);
    if (write_renew(*row, expires_at, exact_interval(ttl)) ==
        RowWrite::written) {
      // A shorter ttl can free the lease sooner than the head expects.
      if (expires_at < row->expires_at) wake_queue_head(name);
      commit_durably();  // like a grant
      return lease_value(fcinfo, name, row->owner, token, row->acquired_at,
                         expires_at);
    }
    CHECK_FOR_INTERRUPTS();
    row = read_grant(name, token);
  }
}

DLOCK_FUNCTION(dlock_assert_held) {
  const char* name = required_name(fcinfo, 0, "lease name");
  int64 token = required_token(fcinfo, 1);
  // It locks the lease's row, which a read-only transaction may not.
  PreventCommandIfReadOnly("dlock.assert_held()");
  require_current_sql_objects();
  // Shares the gate with other asserts; grants, renewals and releases of
  // the lease wait for (or, for grants, give up on) this transaction.
  share_gate(name);
  std::optional<LeaseRow> row = read_lease_for_share(name);
  if (!row || row->token != token) {
    // A holder's row, or else the name's latest grant, for the answer.
    std::optional<LeaseRow> holder = read_holder_for_share(name, token);
    row = holder ? holder : read_grant(name, token);
  }
  check_may_act(name, token, row);
  dlock::NotHeld why =
      dlock::why_not_held(row ? std::optional(grant_of(*row)) : std::nullopt,
                          token, GetCurrentTimestamp());
  if (why == dlock::NotHeld::held) PG_RETURN_VOID();
  if (why == dlock::NotHeld::newer_token) {
    throw_error(sqlstate::stale_token,
                psprintf("fencing token %lld is stale for lease \"%s\"",
                         static_cast<long long>(token), name),
                psprintf("The lease was taken by token %lld.",
                         static_cast<long long>(row->token)),
                "Stop writing: another holder owns the lease now.");
  }
  raise_not_held(name, token, row, why);
}

DLOCK_FUNCTION(dlock_release) {
  const char* name = required_name(fcinfo, 0, "lease name");
  int64 token = required_token(fcinfo, 1);
  const char* owner = optional_owner(fcinfo, 2);
  PreventCommandIfReadOnly("dlock.release()");
  bool first_write = !TransactionIdIsValid(GetTopTransactionIdIfAny());
  // Judged before taking the gate: a release that cannot succeed (wrong
  // token or owner, not held) must not hold the gate, or any role could
  // keep the holder from renewing by releasing with a wrong token in an
  // open transaction.
  std::optional<LeaseRow> row = read_grant(name, token);
  if (!held_with(row, token, GetCurrentTimestamp()) ||
      (owner != nullptr && strcmp(owner, row->owner) != 0)) {
    PG_RETURN_BOOL(false);
  }
  check_may_act(name, token, row);
  wait_gate(name);
  bool released = release_gated(name, token, row);
  if (released) note_release_write(first_write);
  PG_RETURN_BOOL(released);
}

// The exclusive grant if held, else the held holder with the latest token.
DLOCK_FUNCTION(dlock_get) {
  const char* name = required_name(fcinfo, 0, "lease name");
  TimestampTz now = GetCurrentTimestamp();
  std::optional<LeaseRow> row = read_lease(name);
  const LeaseRow* held =
      row && dlock::is_held(grant_of(*row), now) ? &*row : nullptr;
  LeaseRows holders{nullptr, 0};
  if (held == nullptr) holders = read_holders(name, Seen::snapshot);
  for (int i = 0; i < holders.count; ++i) {
    if (dlock::is_held(grant_of(holders.rows[i]), now)) {
      held = &holders.rows[i];  // in token order: the latest wins
    }
  }
  if (held == nullptr) PG_RETURN_NULL();
  return lease_value(fcinfo, name, held->owner, held->token, held->acquired_at,
                     held->expires_at);
}

}  // namespace dlock::pg
