#include <dlock/lease.h>

#include "errors.h"  // src/core's SQLSTATEs

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <random>
#include <thread>

namespace dlock::client {

namespace {

// The columns of dlock.lease as Grant reads them; valid_for in whole
// milliseconds, rounded down (never more validity than the server said);
// acquired_at and expires_at again in microseconds since the epoch
// (extract gives numeric, so the conversion is exact).
// The last column: how long the statement had run on the server when it
// answered (a wait in acquire's queue, mostly), which read_grant adds to
// the moment the call was sent.
constexpr char kGrantColumns[] =
    "SELECT name, token, owner, acquired_at, expires_at,"
    " floor(extract(epoch FROM valid_for) * 1000)::bigint,"
    " (extract(epoch FROM acquired_at) * 1000000)::bigint,"
    " (extract(epoch FROM expires_at) * 1000000)::bigint,"
    " floor(extract(epoch FROM clock_timestamp() - statement_timestamp())"
    "       * 1000)::bigint FROM ";

// Backoff of WaitMode::poll.
constexpr Millis kFirstPoll{50};
constexpr Millis kLongestPoll{1000};

std::optional<std::string> interval_param(const std::optional<Millis>& d) {
  if (!d) return std::nullopt;
  return interval_text(*d);
}

// The owner a renewal or release sends: NULL when the grant names none.
pq::Param owner_param(const Grant& grant) {
  if (grant.owner.empty()) return std::nullopt;
  return grant.owner;
}

// Runs a lease function; its errors come out as lease_errors.h types.
template <typename... Args>
pq::Result call(pq::Connection& conn, const std::string& sql,
                const Args&... args) {
  try {
    return conn.exec(sql, args...);
  } catch (const pq::Error& e) {
    rethrow_as_lease_error(e);
  }
}

// The error for a call whose commit the synchronous standbys did not
// confirm: what the call did, the server's WARNING and what came of it.
NotReplicated not_replicated(const pq::Notice& warning, const Grant& g,
                             const std::string& call,
                             const std::string& outcome) {
  return NotReplicated(warning.sqlstate,
                       "lease " + g.name + ": the " + call + " of token " +
                           std::to_string(g.token) +
                           " was not confirmed by the synchronous standbys (" +
                           warning.message + ")" + outcome,
                       warning.detail);
}

}  // namespace

std::optional<Grant> read_grant(const pq::Result& r, TimePoint sent) {
  if (r.rows() != 1 || r.isnull(0, 1)) return std::nullopt;  // busy
  Grant g;
  g.name = r.value(0, 0);
  g.token = r.int64(0, 1);
  g.owner = r.value(0, 2);
  g.acquired_at = r.value(0, 3);
  g.expires_at = r.value(0, 4);
  g.valid_for = Millis(r.int64(0, 5));
  g.acquired_at_us = r.int64(0, 6);
  g.expires_at_us = r.int64(0, 7);
  g.sent = sent;
  // The statement started on the server after this client sent it, so
  // valid_for, measured as it ended, counts from no later than sent plus
  // the time it ran; and never from later than now (a wall-clock step on
  // the server during the statement must not push it past the answer).
  Millis ran{std::max<std::int64_t>(0, r.int64(0, 8))};
  TimePoint now = BootClock::now();
  g.valid_from = std::min<TimePoint>(sent + ran, now);
  return g;
}

Statement renew_statement(const Grant& grant, std::optional<Millis> ttl) {
  return {std::string(kGrantColumns) +
              "dlock.renew($1, $2::bigint, $3::interval, owner => $4)",
          {grant.name, std::to_string(grant.token), interval_param(ttl),
           owner_param(grant)}};
}

std::string default_owner() {
  // Drawn once per process: host and pid alone repeat across containers
  // that share a hostname and each run their program as pid 1.
  static const std::string run_id = [] {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", std::random_device{}());
    return std::string(hex);
  }();
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "localhost") + ":" +
         std::to_string(getpid()) + ":" + run_id;
}

std::string interval_text(Millis d) {
  return std::to_string(d.count()) + " milliseconds";
}

Statement try_acquire_statement(const std::string& name,
                                const std::string& owner, const Terms& terms) {
  return {
      std::string(kGrantColumns) +
          "dlock.try_acquire($1, $2::interval, owner => $3,"
          " lock_delay => $4::interval, max_hold => $5::interval,"
          " min_hold => $6::interval)",
      {name, interval_text(terms.ttl), owner, interval_param(terms.lock_delay),
       interval_param(terms.max_hold), interval_param(terms.min_hold)}};
}

std::optional<Grant> Leases::try_acquire(const std::string& name,
                                         const std::string& owner,
                                         const Terms& terms) {
  TimePoint sent = BootClock::now();
  Statement s = try_acquire_statement(name, owner, terms);
  pq::Result r = conn_.run(s.sql, s.params, false);
  if (!r.ok()) raise_lease_error(r);
  return replicated(read_grant(r, sent));
}

std::optional<Grant> Leases::replicated(std::optional<Grant> g) {
  std::optional<pq::Notice> warning = conn_.commit_not_replicated();
  if (!g || !warning) return g;
  // A release that is its transaction's only write does not wait for the
  // standbys (see dlock's durability rules), so this cannot hang on them.
  std::string outcome;
  try {
    outcome = release(*g) ? "; released it" : "; it was no longer held";
  } catch (const pq::Error& e) {
    outcome = std::string("; could not release it (") + e.what() +
              "), it ends at its expiry";
  }
  throw not_replicated(*warning, *g, "grant", outcome);
}

std::optional<Grant> Leases::acquire(const std::string& name,
                                     const std::string& owner,
                                     const Terms& terms, Millis timeout,
                                     WaitMode mode) {
  if (mode == WaitMode::poll) {
    TimePoint until = BootClock::now() + timeout;
    Millis pause = kFirstPoll;
    for (;;) {
      if (auto g = try_acquire(name, owner, terms)) return g;
      TimePoint now = BootClock::now();
      if (now >= until) return std::nullopt;
      ++busy_polls_;
      std::this_thread::sleep_until(
          std::chrono::steady_clock::now() +
          std::min<BootClock::duration>(pause, until - now));
      pause = std::min(pause * 2, kLongestPoll);
    }
  }
  TimePoint sent = BootClock::now();
  pq::Result r = conn_.try_exec(
      std::string(kGrantColumns) +
          "dlock.acquire($1, $2::interval, $3::interval, owner => $4,"
          " lock_delay => $5::interval, max_hold => $6::interval,"
          " min_hold => $7::interval)",
      name, interval_text(terms.ttl), interval_text(timeout), owner,
      interval_param(terms.lock_delay), interval_param(terms.max_hold),
      interval_param(terms.min_hold));
  if (!r.ok()) {
    // It waited its whole timeout: busy, not an error.
    if (r.sqlstate() == sqlstate::lock_not_available) return std::nullopt;
    raise_lease_error(r);
  }
  return replicated(read_grant(r, sent));
}

Grant Leases::renew(const Grant& grant, std::optional<Millis> ttl) {
  TimePoint sent = BootClock::now();
  Statement s = renew_statement(grant, ttl);
  pq::Result r = conn_.run(s.sql, s.params, false);
  if (!r.ok()) raise_lease_error(r);
  std::optional<Grant> g = read_grant(r, sent);
  if (!g) throw ServerError("", "dlock.renew returned no lease");
  if (auto warning = conn_.commit_not_replicated()) {
    throw not_replicated(*warning, *g, "renewal", "");
  }
  return *g;
}

bool Leases::release(const Grant& grant) {
  return call(conn_, "SELECT dlock.release($1, $2::bigint, owner => $3)",
              grant.name, grant.token, owner_param(grant))
      .boolean(0, 0);
}

}  // namespace dlock::client
