// A stress test's audit table read back as a history for the checker
// (test/history/), so that its lines of holds are judged by the same rules
// as the pooler, failover and soak runs'.
//
// The table has name, token, owner, acquired_at, expires_at, released_at
// (the instant the release's statement saw on the server's clock),
// invoked_us and completed_us (the grant's client instants). kind_sql is
// an SQL expression for each row's kind: 'read' (a reader's shared
// grant), 'permit' (one of `permits`), 'killed' (a permit whose holder was
// killed: no release, the grant runs to its expiry), anything else an
// exclusive grant. The release's client instants are not kept: it is placed
// at the server's instant (clients and server share one machine's clock).
#pragma once

#include <dlock/pq.h>

#include <string>
#include <vector>

#include "history.h"

namespace stress {

inline std::vector<dlock::history::Op> audit_history(
    dlock::pq::Connection& c, const std::string& table,
    const std::string& kind_sql = "'exclusive'", int permits = 0) {
  using dlock::history::Call;
  using dlock::history::Op;
  using dlock::history::Outcome;
  dlock::pq::Result r =
      c.exec("SELECT name, token, owner, " + kind_sql +
             ","
             "       (extract(epoch FROM acquired_at) * 1000000)::bigint,"
             "       (extract(epoch FROM expires_at) * 1000000)::bigint,"
             "       (extract(epoch FROM released_at) * 1000000)::bigint,"
             "       invoked_us, completed_us"
             "  FROM " +
             table + " ORDER BY invoked_us");
  std::vector<Op> history;
  for (int i = 0; i < r.rows(); ++i) {
    const std::string kind = r.value(i, 3);
    Op grant;
    grant.id = 2 * i + 1;
    grant.client = grant.owner = r.value(i, 2);
    grant.call = Call::grant;
    grant.outcome = Outcome::ok;
    grant.name = r.value(i, 0);
    grant.token = r.int64(i, 1);
    grant.shared = kind == "read";
    grant.permits = kind == "permit" || kind == "killed" ? permits : 0;
    grant.acquired_us = r.int64(i, 4);
    grant.expires_us = r.int64(i, 5);
    grant.ttl_ms = (grant.expires_us - grant.acquired_us) / 1000;
    grant.invoked_us = r.int64(i, 7);
    grant.completed_us = r.int64(i, 8);
    history.push_back(grant);
    if (kind == "killed") continue;
    Op release = grant;
    release.id = 2 * i + 2;
    release.call = Call::release;
    release.shared = false;
    release.permits = release.ttl_ms = 0;
    release.acquired_us = release.expires_us = 0;
    release.server_us = r.int64(i, 6);
    release.invoked_us = release.completed_us = release.server_us;
    history.push_back(release);
  }
  return history;
}

}  // namespace stress
