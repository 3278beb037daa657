// The rules a history (history.h) must keep, and the check of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "history.h"

namespace dlock::history {

// A broken rule and the operations that show it.
struct Violation {
  // "double grant", "over permits", "token order", "renewal", "token
  // regression", "fencing", "lost write" or "final row" (the rules below);
  // with Expect's rules also "outside hold", "late release", "call failed"
  // and "cycle".
  std::string rule;
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
  std::int64_t violations = 0;  // all of them, kept or not
};

// How many violations a verdict keeps with their ops: a broken run can
// break a rule at every later op, and each kept one copies its ops.
constexpr std::size_t kKeptViolations = 10'000;

struct Verdict {
  std::vector<Violation> violations;  // the first kKeptViolations
  Figures figures;
};

// A hold is what acknowledged grants of one name, owner and token share:
// the owner asking again gets its token back with a later expiry, and is
// the same hold, of its first grant's kind: exclusive, shared or a
// semaphore's permit. A hold runs, on the server's clock, from acquired_at
// to the earliest of
//   - its expiry: expires_at of its last acknowledged grant or renewal (by
//     the client's clock at completion; a renewal may bring it earlier),
//     a refused or failed renewal changes nothing;
//   - invoked_us + ttl of a renewal with an unknown outcome, or of a grant
//     of the name by its owner with an unknown outcome (asking again
//     renews the hold), invoked after its last acknowledged grant or
//     renewal was: it may have set an earlier expiry;
//   - its acknowledged release (server_us); a refused release ends nothing;
//     a renewal or release that names an owner applies to that owner's
//     hold of the token only, and a release to a hold started before it;
//   - an acknowledged force_release of the name (server_us), which ends
//     every hold of the name that started before it;
//   - the invocation of a release with an unknown outcome (it may have
//     ended the hold as soon as it was sent), or of a force_release with an
//     unknown outcome for the holds of the name that started before it was
//     sent; such a force_release may also have reached the server late,
//     so the first hold of the name started after it was sent may have
//     ended at once (it is never part of a double grant).
// The rules:
// - double grant: two holds of one name that overlap, unless both are
//   shared or both permits of a semaphore.
// - over permits: a permit hold that starts while `permits` others of the
//   name run.
// - token order: of two holds of one name, not shared, the one with the
//   larger token starts (acquired_at) before the other, on the server's
//   clock (the client's cannot order calls in flight at once).
// - renewal: an acknowledged renewal reports an acquired_at (when it
//   reports one) other than its hold's, or, with a ttl no shorter than
//   that of the hold's acknowledged grant or renewal completed last before
//   it was invoked, an expiry earlier than that one's.
// - token regression: an acknowledged grant completed before another
//   acknowledged grant was invoked (client's clock), with a token not
//   smaller, unless both are the same hold. Tokens are global: this spans
//   names, and an equal token for another owner or name breaks it. A
//   grant that hands its owner a hold begun before it was invoked (the
//   owner asked again) counts as invoked when that hold began.
// - fencing: of one name's row, an accepted write invoked after another
//   accepted write completed, with a smaller token (fenced_update accepts
//   a token >= the row's fence, so a holder may write many times).
// - the final row (value and fence token) must be one the writes may have
//   left: one of the accepted writes of the largest accepted token that no
//   other accepted write of that token was invoked after (it completed
//   first), or a write with an unknown outcome and a token no smaller (it
//   may have landed last); when no write was accepted, the initial row or
//   any write with an unknown outcome. Otherwise:
//   - lost write: the final row is the initial row, or an accepted write
//     that a later accepted one superseded: an acknowledged write lost;
//   - final row: anything else (a refused or failed write, an unknown one
//     with a smaller token, a value never written).
//   A name without a final_row op is not judged on it; without an
//   initial_row op, a name with no accepted write is not either.
// Unknown outcomes never count as grants or accepted writes. Only ops with
// the outcome ok count as acknowledged, accepted or read.
//
// What a run promises beyond those rules, when it injects no fault or
// follows a fixed cycle (the pooler and hand-off stress runs do).
struct Expect {
  // No fault is injected, so every call is answered ok (a grant may be
  // busy): otherwise "call failed". Every accepted write of a hold's
  // token by its owner falls within the hold (its server_us from
  // acquired_at to the hold's end): otherwise "outside hold"; every
  // acknowledged release comes before its hold's expiry: otherwise "late
  // release". (With faults, a frozen holder's late write may be accepted,
  // and a release read the clock a moment after it ran.) Nor is a hold
  // ended by an acknowledged release granted again to its owner (a
  // grant sent after the release was answered): otherwise "token
  // regression". (A crash or a failover may lose an acknowledged release,
  // which commits without waiting for the flush, and hand the owner its
  // hold back.)
  bool fault_free = false;
  // Each acknowledged grant is followed by exactly one write, one renewal
  // and one release with its token, of its name and by its owner, and no
  // write, renewal or release has a token no grant handed out: otherwise
  // "cycle".
  bool cycles = false;
};
// Violations come name by name (in byte order of the names): double grant
// and over permits, token order, token regressions of a hold granted again
// after its release (fault-free runs), renewal, outside hold and late
// release, fencing, lost write and final row; then the other token
// regressions in the order the later grants were invoked; then the calls
// failed in history order; then the cycles in token order. Their ops:
// double grant: the earlier hold's first grant, the renewal whose expiry
// ends it (when one does), the later hold's first grant; over permits: the
// running permits' first grants, then the new one's; token order: the
// smaller token's first grant, then the larger's; a hold granted again:
// its release, then the grant; renewal: the hold's first grant or the call
// whose expiry it moved back, then the renewal; outside hold and late
// release: the hold's first grant or the call its expiry is from, then the
// write or release; token regression and fencing: the earlier op, then the
// later one; lost write and final row: the final_row op, the write or
// initial row it shows (if any), and the last accepted write (the initial
// row when none was accepted); call failed: the call; cycle: the grant,
// then the calls of its token (no grant: the calls).
Verdict check(const std::vector<Op>& history, Expect expect = {});

// A report: a line of figures with the count of violations, then each
// violation (at most kReportedViolations of them, the count of the rest
// after) with its operations, one describe() line each.
constexpr std::size_t kReportedViolations = 20;
std::string report(const Verdict& v);

}  // namespace dlock::history
