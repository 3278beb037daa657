#include <optional>

#include "../core/arguments.h"
#include "../core/deadline.h"
#include "../core/duration.h"
#include "../core/errors.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"
#include "../core/lease_stats.h"

#include "grant.h"
#include "args.h"
#include "authorization.h"
#include "durability.h"
#include "gate.h"
#include "holder_rows.h"
#include "intervals.h"
#include "lease_ended.h"
#include "lease_queue.h"
#include "lease_row.h"
#include "lock_wait.h"
#include "settings.h"
#include "stats.h"

namespace dlock::pg {

namespace {

DLOCK_PLAIN_STRUCT(dlock::Holder);

// Whether the grant in `row` is the caller's: the same owner name under a
// role that may not act for the lease's role is another owner, and so is
// the default owner (see attempt_grant()).
bool is_callers(const LeaseRow& row, const LeaseRequest& req) {
  return req.explicit_owner && strcmp(row.owner, req.owner) == 0 &&
         may_act_for(row.acquired_by);
}

// The lease_store row's grant as the grant decision sees it.
std::optional<LeaseGrant> callers_view(const std::optional<LeaseRow>& row,
                                       const LeaseRequest& req) {
  if (!row) return std::nullopt;
  LeaseGrant grant = grant_of(*row);
  grant.same_owner = is_callers(*row, req);
  return grant;
}

bool is_plain(const LeaseRequest& req) {
  return !req.shared && req.permits == 1;
}

// What an attempt does, decided on the rows read.
enum class Step {
  busy,
  write_store,    // write_grant(kind) on the lease_store row
  new_holder,     // a holder row beside the others
  extend_holder,  // the caller's holder row, same token
};

struct Decision {
  Step step;
  Grant kind;      // write_store
  int holder;      // extend_holder: its index in the holder rows
  Micros free_at;  // busy: when there may be room (0: unknown)
};
DLOCK_PLAIN_STRUCT(Decision);

[[noreturn]] void raise_other_mode(const LeaseRequest& req,
                                   const LeaseRow& mine) {
  throw_error(sqlstate::lease_mode_conflict,
              psprintf("owner \"%s\" holds lease \"%s\" %s", req.owner,
                       req.name, mine.shared ? "shared" : "exclusive"),
              psprintf("It asked for the lease %s; dlock neither upgrades "
                       "nor downgrades a grant.",
                       req.shared ? "shared" : "exclusive"),
              psprintf("Release token %lld first, then ask again.",
                       static_cast<long long>(mine.token)));
}

[[noreturn]] void raise_permits_differ(const LeaseRequest& req, int in_force) {
  const char* asked = req.shared ? "a shared lease"
                      : req.permits == 1
                          ? "an exclusive lease"
                          : psprintf("permits => %d", req.permits);
  throw_error(
      sqlstate::invalid_parameter_value,
      psprintf("lease \"%s\" is held with another permit count", req.name),
      in_force == 1 ? psprintf("Its holders hold it as a lease (permits => 1); "
                               "this call asked for %s.",
                               asked)
                    : psprintf("Its holders hold it with permits => %d; this "
                               "call asked for %s.",
                               in_force, asked),
      "Every holder of a name asks with the same permits; the count "
      "can change once no holder is left.");
}

// The decision on the lease_store row and the holder rows. A plain
// exclusive request on a name without holders is the single-holder rule
// (lease_rules.h); anything else combines every grant of the name
// (holders.h).
Decision decide(const std::optional<LeaseRow>& row, const LeaseRows& rows,
                const LeaseRequest& req, Micros now) {
  Decision d{Step::busy, Grant::busy, -1, 0};
  std::optional<LeaseGrant> grant = callers_view(row, req);
  if (is_plain(req) && rows.count == 0) {
    d.kind = dlock::decide_grant(grant, now);
    if (d.kind == Grant::busy) {
      d.free_at = dlock::free_at(*grant);
    } else {
      d.step = Step::write_store;
    }
    return d;
  }
  // The lease_store row first, then the holder rows.
  int first_holder = row ? 1 : 0;
  int n = first_holder + rows.count;
  auto* all = static_cast<dlock::Holder*>(palloc(sizeof(dlock::Holder) * n));
  if (row) {
    all[0] = dlock::Holder{};
    all[0].grant = *grant;
  }
  for (int i = 0; i < rows.count; ++i) {
    all[first_holder + i] = holder_of(rows.rows[i]);
    all[first_holder + i].grant.same_owner = is_callers(rows.rows[i], req);
  }
  dlock::HolderRequest request{
      req.shared ? dlock::HolderMode::shared : dlock::HolderMode::exclusive,
      req.permits};
  switch (dlock::decide_holder_grant(all, n, request, now)) {
    case HolderGrant::new_holder:
      if (is_plain(req)) {
        d.step = Step::write_store;
        d.kind = row ? Grant::new_token : Grant::create;
      } else {
        d.step = Step::new_holder;
      }
      return d;
    case HolderGrant::same_token:
      for (int i = 0; i < n; ++i) {
        if (!all[i].grant.same_owner || !dlock::is_held(all[i].grant, now)) {
          continue;
        }
        if (i < first_holder) {
          d.step = Step::write_store;
          d.kind = Grant::same_token;
        } else {
          d.step = Step::extend_holder;
          d.holder = i - first_holder;
        }
        return d;
      }
      elog(ERROR, "dlock: the caller's grant of \"%s\" went missing", req.name);
      pg_unreachable();
    case HolderGrant::busy: {
      Micros at = dlock::holders_free_at(all, n, request, now);
      d.free_at = at == INT64_MAX ? 0 : at;
      return d;
    }
    case HolderGrant::other_mode:
      for (int i = first_holder; i < n; ++i) {
        if (all[i].grant.same_owner && dlock::is_held(all[i].grant, now)) {
          raise_other_mode(req, rows.rows[i - first_holder]);
        }
      }
      raise_other_mode(req, *row);
    case HolderGrant::permits_differ:
      raise_permits_differ(req, dlock::permits_in_force(all, n, now));
  }
  pg_unreachable();
}

// Whether a new grant replaced one its holder never released (it expired,
// and its lock-delay passed): a takeover.
bool takes_over(Grant kind, const std::optional<LeaseRow>& row) {
  return kind == Grant::new_token && !row->released;
}

// A new grant (token new_token, at `now`) ended `old`, which expired
// unreleased: its holder is told (lease_ended.h), and it counts as a
// takeover and a lapse.
void taken_over(const char* name, const LeaseRow& old, int64 new_token,
                Micros now) {
  notify_taken_over(name, old.token, new_token);
  count_event(name, dlock::LeaseEvent::takeover,
              dlock::hold_time(old.acquired_at, old.expires_at, now));
  count_event(name, dlock::LeaseEvent::lapse);
}

// Deletes the holder rows that no longer occupy the name, before a new
// grant of it: each decision reads every row of its name. A holder that
// expired without a release was taken over.
void remove_gone_holders(const LeaseRows& rows, const char* name,
                         int64 new_token, Micros now) {
  for (int i = 0; i < rows.count; ++i) {
    const LeaseRow& holder = rows.rows[i];
    if (dlock::occupies(grant_of(holder), now)) continue;
    (void)delete_row(holder);
    if (!holder.released) taken_over(name, holder, new_token, now);
  }
}

void log_grant(const LeaseRequest& req, Step step, Grant kind,
               const std::optional<LeaseRow>& row, int64 token) {
  const char* mode = req.shared ? " (shared)"
                     : req.permits > 1
                         ? psprintf(" (a permit of %d)", req.permits)
                         : "";
  if (step == Step::write_store && takes_over(kind, row)) {
    ereport(LOG, (errmsg_internal(
                     "dlock: lease \"%s\" taken over by owner \"%s\" with "
                     "token %lld after token %lld of owner \"%s\" expired",
                     req.name, req.owner, static_cast<long long>(token),
                     static_cast<long long>(row->token), row->owner)));
  } else {
    bool same = step == Step::extend_holder ||
                (step == Step::write_store && kind == Grant::same_token);
    ereport(LOG, (errmsg_internal("dlock: lease \"%s\"%s %s owner \"%s\" with "
                                  "token %lld",
                                  req.name, mode,
                                  same ? "extended for" : "granted to",
                                  req.owner, static_cast<long long>(token))));
  }
}

// preview_grant(), keeping the lease_store row read for the write (its
// version is what write_grant() compares). Unless `exact`, an exclusive
// request is judged on the lease_store row alone, one index read: a busy
// row answers at once, and a name whose holders occupy it is found busy
// with the gate taken, where the holders are read anyway.
GrantPreview preview(const LeaseRequest& req, bool exact, Micros* free_in,
                     std::optional<LeaseRow>* read) {
  std::optional<LeaseRow>& row = *read;
  row = read_lease(req.name);
  LeaseRows holders{nullptr, 0};
  if (exact || !is_plain(req)) holders = read_holders(req.name, Seen::snapshot);
  Micros now = GetCurrentTimestamp();
  Decision d = decide(row, holders, req, now);
  *free_in = d.free_at > 0 ? d.free_at - now : 0;
  if (d.step == Step::busy) return GrantPreview::busy;
  bool retry = d.step == Step::extend_holder ||
               (d.step == Step::write_store && d.kind == Grant::same_token);
  return retry ? GrantPreview::same_token : GrantPreview::new_grant;
}

// The grant's second half, with the lease's gate held: decided again,
// starting from `row` (the lease_store row as read before the gate), and
// written. attempt_grant() and grant_holding_gate() end here.
Attempt finish_grant(const LeaseRequest& req, std::optional<LeaseRow> row,
                     Granted* out, Micros* free_in) {
  // Decided again when writing, on the rows as they are now: the lease
  // may have changed since it was read, and time has passed. With the
  // gate held no other dlock write of the name is in flight, so the
  // holders read now stay as read.
  LeaseRows holders;
  Micros now;
  Decision d;
  GrantTerms terms;
  const LeaseRow* extended = nullptr;  // the grant a retry extends
  std::optional<LeaseRow> ended;       // the exclusive row a holder replaced
  for (;;) {
    holders = read_holders(req.name, Seen::latest);
    now = GetCurrentTimestamp();
    d = decide(row, holders, req, now);
    if (d.step == Step::busy) {
      // Nothing was granted, so do not keep others from the lease for the
      // rest of the transaction.
      release_gate(gate_tag(req.name));
      *free_in = d.free_at > 0 ? d.free_at - now : 0;
      return Attempt::busy;
    }
    extended = d.step == Step::extend_holder ? &holders.rows[d.holder]
               : d.kind == Grant::same_token ? &*row
                                             : nullptr;
    // A retry of a held grant keeps that grant's start and max_hold.
    terms.now = now;
    terms.expires_at =
        extended != nullptr
            ? dlock::capped_expiry(now, req.ttl, extended->acquired_at,
                                   extended->max_hold)
            : dlock::capped_expiry(now, req.ttl, now, req.max_hold);
    terms.ttl = exact_interval(req.ttl);
    terms.lock_delay = exact_interval(req.lock_delay);
    terms.max_hold = req.max_hold > 0 ? exact_interval(req.max_hold) : nullptr;
    terms.min_hold = req.min_hold > 0 ? exact_interval(req.min_hold) : nullptr;
    // A holder's grant writes no lease_store row, so nothing compares the
    // row this decision saw with the row as it is: check it here. In READ
    // COMMITTED it was read with the gate held and cannot have changed.
    if (d.step == Step::new_holder || d.step == Step::extend_holder) {
      std::optional<LeaseRow> latest = read_lease(req.name, Seen::latest);
      if (!same_version(row, latest)) {
        if (IsolationUsesXactSnapshot()) raise_serialization_failure();
        row = latest;
        continue;
      }
    }
    if (d.step == Step::new_holder && row &&
        !dlock::occupies(grant_of(*row), now)) {
      // The name's exclusive grant has ended: its row goes, as gone
      // holders' rows do, and a holder that never released it is told.
      if (delete_row(*row) == RowWrite::changed) {
        CHECK_FOR_INTERRUPTS();
        row = read_lease(req.name);
        continue;
      }
      ended = *row;
      row.reset();
    }
    if (d.step == Step::new_holder) {
      insert_holder(req.name, req.owner, req.shared, req.permits, terms,
                    &out->token);
      break;
    }
    if (d.step == Step::extend_holder) {
      if (write_grant(Grant::same_token, req.name, extended, req.owner, terms,
                      &out->token) == RowWrite::written) {
        break;
      }
    } else if (write_grant(d.kind, req.name, row ? &*row : nullptr, req.owner,
                           terms, &out->token) == RowWrite::written) {
      break;
    }
    CHECK_FOR_INTERRUPTS();
    row = read_lease(req.name);
  }
  if (extended == nullptr) {
    remove_gone_holders(holders, req.name, out->token, now);
  }
  // A retry with a shorter ttl can free the lease sooner than the head
  // of its queue expects.
  if (extended != nullptr && terms.expires_at < extended->expires_at) {
    wake_queue_head(req.name);
  }
  out->acquired_at = extended != nullptr ? extended->acquired_at : now;
  out->expires_at = terms.expires_at;
  if (log_grants) log_grant(req, d.step, d.kind, row, out->token);
  if (extended == nullptr) count_event(req.name, dlock::LeaseEvent::grant);
  if (d.step == Step::write_store && takes_over(d.kind, row)) {
    taken_over(req.name, *row, out->token, now);
  }
  if (ended && !ended->released) {
    taken_over(req.name, *ended, out->token, now);
  }
  commit_durably();
  return Attempt::granted;
}

}  // namespace

LeaseRequest lease_request(FunctionCallInfo fcinfo, int owner_argno) {
  const char* name = required_name(fcinfo, 0, "lease name");
  return lease_request_for(lease_terms(fcinfo, owner_argno), name);
}

LeaseRequest lease_terms(FunctionCallInfo fcinfo, int owner_argno) {
  LeaseRequest req;
  req.name = nullptr;
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
  int shared_argno = owner_argno + 4, permits_argno = owner_argno + 5;
  // The 0.6.0 functions, until the update, call without them.
  req.shared = false;
  if (PG_NARGS() > shared_argno) {
    require(fcinfo, shared_argno, "shared");
    req.shared = PG_GETARG_BOOL(shared_argno);
  }
  std::optional<int64> permits;
  if (PG_NARGS() > permits_argno && !PG_ARGISNULL(permits_argno)) {
    permits = PG_GETARG_INT32(permits_argno);
  }
  req.permits = dlock::check_permits(permits, req.shared);
  return req;
}

LeaseRequest lease_request_for(const LeaseRequest& terms, const char* name) {
  LeaseRequest req = terms;
  req.name = name;
  return req;
}

GrantPreview preview_grant(const LeaseRequest& req, Micros* free_in) {
  std::optional<LeaseRow> row;
  return preview(req, true, free_in, &row);
}

Attempt grant_holding_gate(const LeaseRequest& req, Granted* out,
                           Micros* free_in) {
  return finish_grant(req, read_lease(req.name), out, free_in);
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
  std::optional<LeaseRow> row;
  GrantPreview first = preview(req, false, free_in, &row);
  if (first == GrantPreview::busy) {
    if (who.head) release_gate(gate);
    return Attempt::busy;
  }
  if (who.head) {
    require_client();
  } else if ((first != GrantPreview::same_token && others_queued(req.name)) ||
             !try_gate(gate)) {
    // The owner's retry of its held grant never waits behind the queue.
    // An exclusive request judged on its row alone is judged on the
    // holders too, so that a refusal (LD004, 22023) does not depend on
    // whether someone waits.
    if (is_plain(req)) (void)preview(req, true, free_in, &row);
    return Attempt::busy;
  }
  return finish_grant(req, row, out, free_in);
}

bool acquire_until(const LeaseRequest& req, Deadline deadline, Granted* out) {
  Micros free_in;
  // Free, and nobody queued: no queue at all.
  if (attempt_grant(req, kOutsideQueue, out, &free_in) == Attempt::granted) {
    return true;
  }
  count_event(req.name, dlock::LeaseEvent::wait_started);
  Micros wait_start = dlock::monotonic_now();
  if (!join_queue(queue_tag(req.name), deadline)) {
    count_event(req.name, dlock::LeaseEvent::wait_timed_out,
                dlock::monotonic_now() - wait_start);
    return false;
  }
  // Each attempt's allocations go to a context reset before the next, so
  // a long wait does not accumulate memory.
  MemoryContext attempt_cxt = AllocSetContextCreate(
      CurrentMemoryContext, "dlock acquire attempt", ALLOCSET_SMALL_SIZES);
  MemoryContext call_cxt = MemoryContextSwitchTo(attempt_cxt);
  Attempter head{true, deadline};
  bool granted = false;
  for (;;) {
    // Reset before reading the lease: a release from now on sets it again.
    ResetLatch(MyLatch);
    MemoryContextReset(attempt_cxt);
    Attempt a = attempt_grant(req, head, out, &free_in);
    if (a == Attempt::granted) {
      granted = true;
      break;
    }
    Micros left = deadline.left(dlock::monotonic_now());
    if (a == Attempt::timed_out || left == 0) break;
    sleep_as_head(dlock::sleep_ms(free_in, left));
  }
  MemoryContextSwitchTo(call_cxt);
  MemoryContextDelete(attempt_cxt);
  count_event(req.name,
              granted ? dlock::LeaseEvent::wait_granted
                      : dlock::LeaseEvent::wait_timed_out,
              dlock::monotonic_now() - wait_start);
  return granted;
}

void refuse_waits_in_snapshot(const char* function, const char* instead) {
  if (!IsolationUsesXactSnapshot()) return;
  throw_error(sqlstate::feature_not_supported,
              psprintf("%s cannot wait in a REPEATABLE READ or SERIALIZABLE "
                       "transaction",
                       function),
              "The transaction's snapshot would never see the lease "
              "being released.",
              psprintf("Use %s, or call %s in a READ COMMITTED transaction.",
                       instead, function));
}

void raise_timed_out(const char* name, Micros timeout) {
  throw_error(
      sqlstate::lock_not_available,
      psprintf("could not acquire lease \"%s\" within the timeout", name),
      psprintf("Waited %s.", duration_text(timeout)));
}

}  // namespace dlock::pg
