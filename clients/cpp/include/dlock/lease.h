// dlock's lease functions from C++: try_acquire, acquire, renew, release,
// over a pq::Connection the caller owns (in autocommit: each call is its
// own transaction, so a grant is committed when the call returns).
//
// Owners are always explicit: the caller's name for itself (default_owner()
// gives host:pid:R). A session's default owner would be wrong behind a
// transaction pooler, where many clients share one server session.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dlock/lease_errors.h>
#include <dlock/local_deadline.h>
#include <dlock/pq.h>

namespace dlock::client {

// One grant, as dlock returned it.
struct Grant {
  std::string name;
  std::int64_t token = 0;
  // renew() and release() send it for the server to check; "" (never a
  // valid owner) sends NULL: the token alone names the grant.
  std::string owner;
  std::string acquired_at;  // the server's timestamptz text
  std::string expires_at;   // the server's timestamptz text
  // The same two instants as microseconds since the Unix epoch on the
  // server's clock, exact: for comparing them without parsing the text.
  std::int64_t acquired_at_us = 0;
  std::int64_t expires_at_us = 0;
  Millis valid_for{0};  // validity left when the server answered
  TimePoint sent;       // when this client sent the call that returned it
  // Where valid_for counts from on this client's clock: sent, plus how long
  // the statement ran on the server (acquire's wait in the queue), never
  // later than the answer's arrival.
  TimePoint valid_from;
};

// The terms of a grant (see dlock.try_acquire); unset means dlock's default.
struct Terms {
  Millis ttl{30000};
  std::optional<Millis> lock_delay;
  std::optional<Millis> max_hold;
  std::optional<Millis> min_hold;
};

// How acquire() waits.
enum class WaitMode {
  // In the server, in dlock's queue: woken at once, in arrival order. It
  // keeps a server session for the whole wait.
  server,
  // try_acquire again and again with backoff (50 ms doubling to 1 s): for
  // clients behind a transaction pooler, where a waiting call would hold
  // one of the pool's few server connections.
  poll,
};

// host:pid:R for this process, R eight hex digits drawn once per process:
// an owner no other process on any host uses.
std::string default_owner();

// An interval parameter for a duration ("1500 milliseconds").
std::string interval_text(Millis d);

// A renewal as the keeper sends it (without blocking), and how a lease
// function's answer reads: nullopt for NULL (busy).
struct Statement {
  std::string sql;
  std::vector<pq::Param> params;
};
Statement renew_statement(const Grant& grant, std::optional<Millis> ttl);
// try_acquire as Leases sends it, for callers that run it themselves (with
// Connection::run_interruptible) and read the answer with read_grant.
Statement try_acquire_statement(const std::string& name,
                                const std::string& owner, const Terms& terms);
std::optional<Grant> read_grant(const pq::Result& r, TimePoint sent);

class Leases {
 public:
  explicit Leases(pq::Connection& conn) : conn_(conn) {}

  // A grant, or a renewal, that the server committed without its
  // synchronous standbys' confirmation (the commit's wait was cancelled) is
  // not one: try_acquire and acquire release such a grant, best effort, and
  // all three throw NotReplicated, which says whether the release went
  // through.

  // The grant, or nullopt when the lease is busy.
  std::optional<Grant> try_acquire(const std::string& name,
                                   const std::string& owner,
                                   const Terms& terms);
  // Waits up to timeout; nullopt when it passed with the lease still busy.
  // WaitMode::poll counts each busy answer in busy_polls().
  std::optional<Grant> acquire(const std::string& name,
                               const std::string& owner, const Terms& terms,
                               Millis timeout,
                               WaitMode mode = WaitMode::server);
  // The renewed grant (same token). ttl unset keeps the grant's TTL.
  // Throws LeaseNotHeld, StaleToken, TokenNeverIssued, NotPermitted, ...
  Grant renew(const Grant& grant, std::optional<Millis> ttl = std::nullopt);
  // True if this call released it; false if it was no longer held with
  // this token by this owner.
  bool release(const Grant& grant);

  // How many times a polling acquire() on this object found the lease busy
  // and paused before asking again.
  std::int64_t busy_polls() const { return busy_polls_; }

 private:
  // g, unless the call that returned it was not replicated (see above).
  std::optional<Grant> replicated(std::optional<Grant> g);

  pq::Connection& conn_;
  std::int64_t busy_polls_ = 0;
};

}  // namespace dlock::client
