// The history a pooler stress run logs (pooler_stress.cpp), and its
// checker: plain C++ without a server, so that test/unit/history feeds it
// made-up histories.
//
// Each client cycles through one grant of a lease, a fenced write of that
// lease's row with the grant's token, a renewal and a release, and logs
// every call as an Op. Instants are the server's clock, in microseconds
// since the Unix epoch: a hold starts at its grant's acquired_at and ends
// at the clock_timestamp() its release statement read after
// dlock.release returned (before it committed, so before anyone else could
// see the lease free).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pooler_stress {

enum class OpKind { grant, write, renew, release };

// One call a client made.
struct Op {
  OpKind kind = OpKind::grant;
  std::string owner;       // the client's explicit owner, stress-<n>
  std::string name;        // the lease
  std::int64_t token = 0;  // the grant's token (0: a grant that failed)
  // The call did what its cycle needs: grant: granted; write:
  // fenced_update updated the one row; renew: renewed; release: true.
  bool ok = false;
  std::string sqlstate;  // the error's SQLSTATE, "" if none or client-side
  std::string error;     // why it is not ok
  // grant, renew: the lease's acquired_at and expires_at as returned.
  std::int64_t acquired_us = 0;
  std::int64_t expires_us = 0;
  // write, release: clock_timestamp() read after the call, in its
  // statement.
  std::int64_t clock_us = 0;
  std::string value;            // write: the value written
  std::int64_t busy_polls = 0;  // grant: busy answers before it
  int backend_pid = 0;          // write, release: the backend that ran it
};

// A fenced row: its value and its fence token.
struct Row {
  std::string value;
  std::int64_t fence = 0;
  bool operator==(const Row& o) const {
    return value == o.value && fence == o.fence;
  }
};
// Each lease's row, by lease name.
using Rows = std::map<std::string, Row>;

// A broken rule, and the operations that break it.
struct Violation {
  std::string what;
  std::vector<Op> ops;
};

// Checks the history, per lease name and in token order:
//   - every call did what its cycle needs (no error, every fenced write
//     accepted, every release true), and every grant has exactly one
//     write, one renewal and one release, of the grant's name and token;
//   - no token is granted twice, and tokens strictly increase in the
//     order of the grants (acquired_at);
//   - no hold starts before the one before it ended;
//   - a renewal keeps acquired_at and expires no earlier; the write
//     happens within its hold; the release comes before the hold's
//     (renewed) expiry;
//   - the final row of each name (`after`) is its last accepted write, or
//     as it was (`before`) if nothing was written.
// Empty when every rule holds.
std::vector<Violation> check(const std::vector<Op>& history, const Rows& before,
                             const Rows& after);

// Figures of a run.
struct Summary {
  std::int64_t cycles = 0;       // grants
  std::int64_t busy_polls = 0;   // busy answers to polling acquires
  std::int64_t max_hold_us = 0;  // longest grant to release, server clock
  std::int64_t errors = 0;       // calls that were not ok
  std::set<int> backends;        // server backends seen running calls
};
Summary summarize(const std::vector<Op>& history);

// One line for an operation, for reports.
std::string describe(const Op& op);

}  // namespace pooler_stress
