#include "grant.h"
#include "args.h"
#include "authorization.h"
#include "durability.h"
#include "gate.h"
#include "intervals.h"
#include "lease_row.h"
#include "settings.h"

namespace dlock::pg {

namespace {

// The row as the grant decision sees it: the same owner name under a role
// that may not act for the lease's role is another owner.
std::optional<LeaseRow> rules_view(const std::optional<StoredLease>& row,
                                   const char* owner) {
  if (!row) return std::nullopt;
  LeaseRow rules = rules_row(*row);
  rules.same_owner =
      strcmp(row->owner, owner) == 0 && may_act_for(row->acquired_by);
  return rules;
}

void log_grant(const LeaseRequest& req, Grant kind,
               const std::optional<StoredLease>& row, int64 token) {
  if (kind == Grant::new_token && !row->released) {
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
  req.owner = owner_arg(fcinfo, owner_argno);
  req.lock_delay = dlock::check_optional_duration(
      optional_interval(fcinfo, owner_argno + 1), "lock_delay", max_ttl());
  req.max_hold = dlock::check_optional_duration(
      optional_interval(fcinfo, owner_argno + 2), "max_hold", max_ttl());
  return req;
}

bool attempt_grant(const LeaseRequest& req, Granted* out, Micros* holder_left) {
  std::optional<StoredLease> row = read_lease(req.name);
  Micros now = GetCurrentTimestamp();
  *holder_left = 0;
  std::optional<LeaseRow> rules = rules_view(row, req.owner);
  if (dlock::decide_grant(rules, now) == Grant::busy) {
    *holder_left = dlock::free_at(*rules) - now;
    return false;
  }
  LOCKTAG gate = gate_tag(req.name);
  if (!try_gate(gate)) return false;

  // Decided again when writing, on the row version written: the lease may
  // have changed between the read and the gate, and time has passed.
  Grant kind;
  GrantTerms terms;
  for (;;) {
    now = GetCurrentTimestamp();
    kind = dlock::decide_grant(rules_view(row, req.owner), now);
    if (kind == Grant::busy) {
      // Nothing was granted, so do not keep others from the lease for the
      // rest of the transaction.
      release_gate(gate);
      return false;
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
    if (write_grant(kind, req.name, row ? &*row : nullptr, req.owner, terms,
                    &out->token) == RowWrite::written) {
      break;
    }
    CHECK_FOR_INTERRUPTS();
    row = read_lease(req.name);
  }
  out->acquired_at = kind == Grant::same_token ? row->acquired_at : now;
  out->expires_at = terms.expires_at;
  if (log_grants) log_grant(req, kind, row, out->token);
  commit_durably();
  return true;
}

}  // namespace dlock::pg
