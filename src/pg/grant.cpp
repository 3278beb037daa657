#include "grant.h"
#include "args.h"
#include "authorization.h"
#include "durability.h"
#include "gate.h"
#include "intervals.h"
#include "lease_ended.h"
#include "lease_queue.h"
#include "lease_row.h"
#include "lock_wait.h"
#include "settings.h"

namespace dlock::pg {

namespace {

// The row as the grant decision sees it: the same owner name under a role
// that may not act for the lease's role is another owner, and so is the
// default owner (see attempt_grant()).
std::optional<LeaseRow> rules_view(const std::optional<StoredLease>& row,
                                   const LeaseRequest& req) {
  if (!row) return std::nullopt;
  LeaseRow rules = rules_row(*row);
  rules.same_owner = req.explicit_owner && strcmp(row->owner, req.owner) == 0 &&
                     may_act_for(row->acquired_by);
  return rules;
}

// Whether a new grant replaced one its holder never released (it expired,
// and its lock-delay passed): a takeover.
bool takes_over(Grant kind, const std::optional<StoredLease>& row) {
  return kind == Grant::new_token && !row->released;
}

void log_grant(const LeaseRequest& req, Grant kind,
               const std::optional<StoredLease>& row, int64 token) {
  if (takes_over(kind, row)) {
    ereport(LOG, (errmsg_internal(
                     "dlock: lease \"%s\" taken over by owner \"%s\" with "
                     "token %lld after token %lld of owner \"%s\" expired",
                     req.name, req.owner, static_cast<long long>(token),
                     static_cast<long long>(row->token), row->owner)));
  } else {
    ereport(LOG,
            (errmsg_internal(
                "dlock: lease \"%s\" %s owner \"%s\" with token %lld", req.name,
                kind == Grant::same_token ? "extended for" : "granted to",
                req.owner, static_cast<long long>(token))));
  }
}

}  // namespace

LeaseRequest lease_request(FunctionCallInfo fcinfo, int owner_argno) {
  LeaseRequest req;
  req.name = required_name(fcinfo, 0, "lease name");
  req.ttl = dlock::check_ttl(
      interval_fields(required_interval(fcinfo, 1, "ttl")), max_ttl());
  req.explicit_owner = optional_owner(fcinfo, owner_argno) != nullptr;
  req.owner = owner_arg(fcinfo, owner_argno);
  req.lock_delay = dlock::check_optional_duration(
      optional_interval(fcinfo, owner_argno + 1), "lock_delay", max_ttl());
  req.max_hold = dlock::check_optional_duration(
      optional_interval(fcinfo, owner_argno + 2), "max_hold", max_ttl());
  req.min_hold = dlock::check_optional_duration(
      optional_interval(fcinfo, owner_argno + 3), "min_hold", max_ttl());
  dlock::check_min_hold(req.min_hold, req.max_hold);
  return req;
}

Attempt attempt_grant(const LeaseRequest& req, const Attempter& who,
                      Granted* out, Micros* free_in) {
  LOCKTAG gate = gate_tag(req.name);
  // The head takes the gate before it reads, so it waits for a write of
  // the lease still in flight (an uncommitted grant, or a release whose
  // transaction is prepared) instead of reading the lease as it was: a
  // lock wait PostgreSQL's deadlock detector sees.
  if (who.head && !lock_until(gate, ExclusiveLock, who.deadline)) {
    return Attempt::timed_out;
  }
  std::optional<StoredLease> row = read_lease(req.name);
  Micros now = GetCurrentTimestamp();
  *free_in = 0;
  std::optional<LeaseRow> rules = rules_view(row, req);
  Grant first = dlock::decide_grant(rules, now);
  if (first == Grant::busy) {
    if (who.head) release_gate(gate);
    *free_in = dlock::free_at(*rules) - now;
    return Attempt::busy;
  }
  if (who.head) {
    require_client();
  } else if ((first != Grant::same_token && others_queued(req.name)) ||
             !try_gate(gate)) {
    // The owner's retry of its held grant never waits behind the queue.
    return Attempt::busy;
  }

  // Decided again when writing, on the row version written: the lease may
  // have changed between the read and the gate, and time has passed.
  Grant kind;
  GrantTerms terms;
  for (;;) {
    now = GetCurrentTimestamp();
    std::optional<LeaseRow> current = rules_view(row, req);
    kind = dlock::decide_grant(current, now);
    if (kind == Grant::busy) {
      // Nothing was granted, so do not keep others from the lease for the
      // rest of the transaction.
      release_gate(gate);
      *free_in = dlock::free_at(*current) - now;
      return Attempt::busy;
    }
    // A retry of a held grant keeps that grant's start and max_hold.
    terms.now = now;
    terms.expires_at =
        kind == Grant::same_token
            ? dlock::capped_expiry(now, req.ttl, row->acquired_at,
                                   row->max_hold)
            : dlock::capped_expiry(now, req.ttl, now, req.max_hold);
    terms.ttl = exact_interval(req.ttl);
    terms.lock_delay = exact_interval(req.lock_delay);
    terms.max_hold = req.max_hold > 0 ? exact_interval(req.max_hold) : nullptr;
    terms.min_hold = req.min_hold > 0 ? exact_interval(req.min_hold) : nullptr;
    if (write_grant(kind, req.name, row ? &*row : nullptr, req.owner, terms,
                    &out->token) == RowWrite::written) {
      break;
    }
    CHECK_FOR_INTERRUPTS();
    row = read_lease(req.name);
  }
  // A retry with a shorter ttl can free the lease sooner than the head
  // of its queue expects.
  if (kind == Grant::same_token && terms.expires_at < row->expires_at) {
    wake_queue_head(req.name);
  }
  out->acquired_at = kind == Grant::same_token ? row->acquired_at : now;
  out->expires_at = terms.expires_at;
  if (log_grants) log_grant(req, kind, row, out->token);
  if (takes_over(kind, row)) {
    notify_taken_over(req.name, row->token, out->token);
  }
  commit_durably();
  return Attempt::granted;
}

}  // namespace dlock::pg
