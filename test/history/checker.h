// The rules a history (history.h) must keep, checked per lease name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "history.h"

namespace dlock::history {

// A broken rule and the operations that show it.
struct Violation {
  std::string rule;  // "double grant", "token regression", "fencing"
  std::string what;
  std::vector<Op> ops;
};

// Figures of a history.
struct Figures {
  std::int64_t ops = 0;
  std::int64_t grants = 0;   // acknowledged grants
  std::int64_t writes = 0;   // accepted fenced writes
  std::int64_t unknown = 0;  // calls with no answer
  std::int64_t names = 0;
};

struct Verdict {
  std::vector<Violation> violations;
  Figures figures;
};

// The rules:
// - double grant: two acknowledged grants of one name, with different
//   tokens, whose holds overlap on the server's clock. A hold runs from
//   acquired_at to the earliest of its expiry (extended by acknowledged
//   renewals), its acknowledged release or force_release (server_us), and
//   the invocation of a release or force_release whose outcome is unknown
//   (it may have ended the hold as soon as it was sent).
// - token regression: a grant acknowledged before another grant was
//   invoked (client's clock) whose token is not smaller, unless both are
//   the same hold (same name, owner and token: the owner asked again).
// - fencing: of one name's row, an accepted write invoked after another
//   accepted write completed, with a smaller token; and the final row must
//   be the write of the largest accepted token, or a write with an unknown
//   outcome and no smaller token (it may have landed), or, when no write
//   was accepted, the initial row. A final row older than an accepted
//   write is an acknowledged write lost.
// Unknown outcomes never count as grants or accepted writes.
Verdict check(const std::vector<Op>& history);

// A report: figures, then each violation with its operations.
std::string report(const Verdict& v);

}  // namespace dlock::history
