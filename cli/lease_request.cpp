#include "lease_request.h"

#include "messages.h"

namespace dlock::cli {

namespace {

// Durations are read by now; Millis is client::Millis.
std::optional<Millis> millis_of(const std::optional<Duration>& d) {
  if (!d) return std::nullopt;
  return d->millis.value();
}

}  // namespace

client::Terms terms_of(const LeaseRequest& r) {
  client::Terms terms;
  terms.ttl = r.ttl.millis.value();
  terms.lock_delay = millis_of(r.lock_delay);
  terms.max_hold = millis_of(r.max_hold);
  terms.min_hold = millis_of(r.min_hold);
  return terms;
}

std::optional<client::Grant> take_lease(client::Leases& leases,
                                        const LeaseRequest& r,
                                        const std::string& owner) {
  if (!r.wait) return leases.try_acquire(r.name, owner, terms_of(r));
  return leases.acquire(
      r.name, owner, terms_of(r), *millis_of(r.wait),
      r.pooler ? client::WaitMode::poll : client::WaitMode::server);
}

int busy(const LeaseRequest& r) {
  if (r.verbosity != Verbosity::quiet) {
    say("lease " + r.name + " is busy" +
        (r.wait ? " (waited " + r.wait->text + ")" : ""));
  }
  return r.conflict_exit_code;
}

void report_grant(const LeaseRequest& r, const client::Grant& g) {
  if (r.verbosity != Verbosity::verbose) return;
  say("lease " + g.name + " acquired: token " + std::to_string(g.token) +
      ", owner " + g.owner + ", expires at " + g.expires_at + " (valid for " +
      seconds_text(g.valid_for) + " s)");
}

}  // namespace dlock::cli
