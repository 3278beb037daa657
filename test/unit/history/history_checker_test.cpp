// The failure runs' history checker (test/history/checker.h) on hand-made
// histories: one for each rule broken, the legal look-alikes that must
// pass, the report, read_files on files as clients leave them, and
// dlock_history_check's output and exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "checker.h"
#include "history.h"

namespace dlock::history {
namespace {

constexpr std::int64_t kStartUs = 1'800'000'000'000'000;

// An instant `ms` milliseconds into the run, on either clock.
std::int64_t at(std::int64_t ms) { return kStartUs + ms * 1'000; }

// Builds a history. Every call is invoked at its `ms`, reaches the server
// 0.5 ms later and is answered 1 ms after it was invoked; an unknown one
// is never answered. Each owner logs as its own client.
class History {
 public:
  // A grant of `token` (0 unless ok), expiring ttl_ms after the server
  // saw it; `acquired_ms` is the server's acquired_at when the owner asks
  // again (-1: this call's own instant).
  Op& grant(const std::string& owner, const std::string& name,
            std::int64_t token, std::int64_t ms, std::int64_t ttl_ms,
            Outcome outcome = Outcome::ok, std::int64_t acquired_ms = -1) {
    Op& op = add(Call::grant, outcome, name, owner, ms);
    op.ttl_ms = ttl_ms;
    if (outcome != Outcome::ok) return op;
    op.token = token;
    op.acquired_us = acquired_ms < 0 ? server(ms) : server(acquired_ms);
    op.expires_us = server(ms) + ttl_ms * 1'000;
    return op;
  }
  Op& renew(const std::string& owner, const std::string& name,
            std::int64_t token, std::int64_t ms, std::int64_t ttl_ms,
            Outcome outcome = Outcome::ok) {
    Op& op = add(Call::renew, outcome, name, owner, ms);
    op.token = token;
    op.ttl_ms = ttl_ms;
    if (outcome == Outcome::ok) op.expires_us = server(ms) + ttl_ms * 1'000;
    return op;
  }
  Op& release(const std::string& owner, const std::string& name,
              std::int64_t token, std::int64_t ms,
              Outcome outcome = Outcome::ok) {
    Op& op = add(Call::release, outcome, name, owner, ms);
    op.token = token;
    if (outcome == Outcome::ok) op.server_us = server(ms);
    return op;
  }
  Op& force_release(const std::string& name, std::int64_t ms,
                    Outcome outcome = Outcome::ok) {
    Op& op = add(Call::force_release, outcome, name, "admin", ms);
    if (outcome == Outcome::ok) op.server_us = server(ms);
    return op;
  }
  Op& write(const std::string& owner, const std::string& name,
            std::int64_t token, const std::string& value, std::int64_t ms,
            Outcome outcome = Outcome::ok) {
    Op& op = add(Call::write, outcome, name, owner, ms);
    op.token = token;
    op.value = value;
    if (outcome == Outcome::ok) op.server_us = server(ms);
    return op;
  }
  Op& row(Call call, const std::string& name, const std::string& value,
          std::int64_t fence, std::int64_t ms) {
    Op& op = add(call, Outcome::ok, name, "", ms);
    op.owner.clear();
    op.client = "reader";
    op.value = value;
    op.token = fence;
    return op;
  }

  Verdict check() const { return history::check(ops_); }
  const std::vector<Op>& ops() const { return ops_; }

 private:
  static std::int64_t server(std::int64_t ms) { return at(ms) + 500; }

  Op& add(Call call, Outcome outcome, const std::string& name,
          const std::string& owner, std::int64_t ms) {
    Op op;
    op.id = next_id_++;
    op.client = owner;
    op.call = call;
    op.outcome = outcome;
    op.name = name;
    op.owner = owner;
    op.invoked_us = at(ms);
    if (outcome != Outcome::unknown) op.completed_us = at(ms) + 1'000;
    ops_.push_back(std::move(op));
    return ops_.back();
  }

  std::vector<Op> ops_;
  std::int64_t next_id_ = 1;
};

using Ids = std::vector<std::int64_t>;

// The ids of a violation's ops.
Ids ids(const Violation& v) {
  Ids out;
  for (const Op& op : v.ops) out.push_back(op.id);
  return out;
}

// The one violation a history must have.
Violation only(const History& h) {
  Verdict v = h.check();
  EXPECT_EQ(v.violations.size(), 1u) << report(v);
  if (v.violations.empty()) return {};
  return v.violations.front();
}

// The history has exactly one violation: of `rule`, showing the ops
// `want`, and saying `what` unless it is empty.
void expect_only(const History& h, const std::string& rule, const Ids& want,
                 const std::string& what = "") {
  Violation v = only(h);
  EXPECT_EQ(v.rule, rule);
  EXPECT_EQ(ids(v), want);
  if (!what.empty()) {
    EXPECT_EQ(v.what, what);
  }
}

void expect_clean(const History& h) {
  Verdict v = h.check();
  EXPECT_TRUE(v.violations.empty()) << report(v);
}

// --- Each rule broken ---------------------------------------------------

TEST(HistoryChecker, DoubleGrant) {
  History h;
  std::int64_t a = h.grant("p", "job", 5, 0, 1'000).id;
  std::int64_t b = h.grant("q", "job", 6, 100, 1'000).id;
  expect_only(h, "double grant", {a, b},
              "\"job\": token 5 (owner p) held until " +
                  std::to_string(at(1'000) + 500) +
                  ", token 6 (owner q) granted from " +
                  std::to_string(at(100) + 500));
}

TEST(HistoryChecker, OverlapThroughARenewal) {
  History h;
  std::int64_t a = h.grant("p", "job", 5, 0, 100).id;
  std::int64_t r = h.renew("p", "job", 5, 50, 1'000).id;
  std::int64_t b = h.grant("q", "job", 6, 200, 1'000).id;
  expect_only(h, "double grant", {a, r, b});
}

TEST(HistoryChecker, RenewalsThatFailedOrHadNoAnswerExtendNothing) {
  History h;
  h.grant("p", "job", 5, 0, 100);
  h.renew("p", "job", 5, 50, 1'000, Outcome::unknown);
  h.renew("p", "job", 5, 60, 1'000, Outcome::refused);
  h.renew("p", "job", 5, 70, 1'000, Outcome::failed);
  h.grant("q", "job", 6, 200, 1'000);
  expect_clean(h);
}

TEST(HistoryChecker, RenewalBringingTheExpiryEarlier) {
  History h;
  h.grant("p", "job", 5, 0, 10'000);
  h.renew("p", "job", 5, 50, 100);
  h.grant("q", "job", 6, 200, 1'000);
  expect_clean(h);
}

TEST(HistoryChecker, TokenRegressionAcrossNames) {
  History h;
  std::int64_t a = h.grant("p", "a", 7, 0, 1'000).id;
  std::int64_t b = h.grant("q", "b", 3, 10, 1'000).id;
  expect_only(h, "token regression", {a, b},
              "token 3 granted (\"b\", owner q) after token 7 was (\"a\", "
              "owner p)");
}

TEST(HistoryChecker, HoldGrantedAgainAfterItsReleaseInAFaultFreeRun) {
  History h;
  h.grant("p", "job", 5, 0, 1'000);
  std::int64_t r = h.release("p", "job", 5, 10).id;
  std::int64_t again = h.grant("p", "job", 5, 20, 1'000, Outcome::ok, 0).id;
  Verdict v = check(h.ops(), {/*fault_free=*/true, /*cycles=*/false});
  ASSERT_EQ(v.violations.size(), 1u) << report(v);
  EXPECT_EQ(v.violations[0].rule, "token regression");
  EXPECT_EQ(ids(v.violations[0]), (Ids{r, again}));
  EXPECT_EQ(v.violations[0].what,
            "token 5 granted (\"job\", owner p) again after its release");
  // A crash may have lost the release: the owner got its hold back.
  expect_clean(h);
}

TEST(HistoryChecker, HoldGrantedAgainWhileItsReleaseWasInFlight) {
  // The grant was sent before the release was answered: it may have run
  // first, and handed the owner its hold back.
  History h;
  h.grant("p", "job", 5, 0, 1'000);
  Op& r = h.release("p", "job", 5, 10);
  r.server_us = at(25);
  r.completed_us = at(30);
  h.grant("p", "job", 5, 20, 1'000, Outcome::ok, 0);
  Verdict v = check(h.ops(), {/*fault_free=*/true, /*cycles=*/false});
  EXPECT_TRUE(v.violations.empty()) << report(v);
}

TEST(HistoryChecker, OwnerHandedAnEarlierHoldAfterLargerTokens) {
  // p's release got no answer; later p asks again and is handed the hold
  // it still has, token 5, which began before q's token 9 was granted.
  History h;
  h.grant("p", "a", 5, 0, 10'000);
  h.release("p", "a", 5, 10, Outcome::unknown);
  h.grant("q", "b", 9, 50, 1'000);
  h.grant("p", "a", 5, 100, 10'000, Outcome::ok, 0);
  expect_clean(h);
}

TEST(HistoryChecker, OwnerHandedAHoldWhoseGrantWasNeverAnswered) {
  History h;
  h.grant("p", "a", 0, 0, 10'000, Outcome::unknown);
  h.grant("q", "b", 9, 50, 1'000);
  h.grant("p", "a", 5, 100, 10'000, Outcome::ok, 0);
  expect_clean(h);
}

TEST(HistoryChecker, OwnerHandedAHoldThatBeganAfterALargerToken) {
  History h;
  std::int64_t q = h.grant("q", "b", 9, 0, 1'000).id;
  std::int64_t p = h.grant("p", "a", 5, 100, 10'000, Outcome::ok, 50).id;
  expect_only(h, "token regression", {q, p});
}

TEST(HistoryChecker, EqualTokenForAnotherOwner) {
  History h;
  std::int64_t a = h.grant("p", "job", 5, 0, 1'000).id;
  h.release("p", "job", 5, 10);
  std::int64_t b = h.grant("q", "job", 5, 20, 1'000).id;
  expect_only(h, "token regression", {a, b});
}

TEST(HistoryChecker, EqualTokenForAnotherOwnerAtOnce) {
  // Neither answered before the other was asked: the holds overlap.
  History h;
  std::int64_t a = h.grant("p", "job", 5, 0, 1'000).id;
  std::int64_t b = h.grant("q", "job", 5, 0, 1'000).id;
  expect_only(h, "double grant", {a, b});
}

TEST(HistoryChecker, StaleWriteAccepted) {
  History h;
  std::int64_t hi = h.write("p", "job", 7, "p1", 0).id;
  std::int64_t lo = h.write("q", "job", 5, "q1", 10).id;
  expect_only(h, "fencing", {hi, lo},
              "\"job\": a write with token 5 accepted after one with token 7 "
              "completed");
}

TEST(HistoryChecker, FinalRowNotTheLastWrite) {
  History h;
  h.row(Call::initial_row, "job", "init", 0, 0);
  std::int64_t w = h.write("p", "job", 5, "p1", 10).id;
  std::int64_t stale = h.write("q", "job", 3, "q1", 20, Outcome::refused).id;
  std::int64_t fin = h.row(Call::final_row, "job", "q1", 3, 30).id;
  expect_only(h, "final row", {fin, stale, w},
              "\"job\": the final row (value q1, fence 3) is none the writes "
              "may have left: the last accepted write has token 5");
}

TEST(HistoryChecker, FinalRowNeverWritten) {
  History h;
  h.row(Call::initial_row, "job", "init", 0, 0);
  std::int64_t fin = h.row(Call::final_row, "job", "other", 0, 30).id;
  std::int64_t initial = h.ops().front().id;
  expect_only(h, "final row", {fin, initial});
}

TEST(HistoryChecker, AcknowledgedWriteLost) {
  History h;
  std::int64_t initial = h.row(Call::initial_row, "job", "init", 0, 0).id;
  std::int64_t w = h.write("p", "job", 5, "p1", 10).id;
  std::int64_t fin = h.row(Call::final_row, "job", "init", 0, 30).id;
  expect_only(h, "lost write", {fin, initial, w},
              "\"job\": the final row (value init, fence 0) is still the "
              "initial row, not the accepted write with token 5");
}

// Two accepted writes, the second (with `token`) invoked after the first
// (token 5) completed, and the first left as the final row.
void expect_second_write_lost(std::int64_t token) {
  History h;
  std::int64_t first = h.write("p", "job", 5, "p1", 10).id;
  std::int64_t second = h.write("q", "job", token, "q1", 20).id;
  std::int64_t fin = h.row(Call::final_row, "job", "p1", 5, 30).id;
  expect_only(h, "lost write", {fin, first, second});
}

TEST(HistoryChecker, SupersededWriteLeftAsTheFinalRow) {
  expect_second_write_lost(6);
}

TEST(HistoryChecker, EqualTokenWriteFollowedInRealTime) {
  // A holder may write many times with its token: the last is the row.
  expect_second_write_lost(5);
}

// --- Shared leases and semaphores ---------------------------------------

// Makes a grant shared, or one of a semaphore of `permits`.
Op& shared(Op& op) {
  op.shared = true;
  return op;
}
Op& permit(Op& op, std::int64_t permits) {
  op.permits = permits;
  return op;
}

TEST(HistoryChecker, ReadersHoldTogether) {
  History h;
  shared(h.grant("r1", "rw", 5, 0, 1'000));
  shared(h.grant("r2", "rw", 6, 10, 1'000));
  h.release("r1", "rw", 5, 20);
  h.release("r2", "rw", 6, 30);
  h.grant("w", "rw", 7, 40, 1'000);
  expect_clean(h);
}

TEST(HistoryChecker, AWriterWhileAReaderHolds) {
  History h;
  std::int64_t r = shared(h.grant("r1", "rw", 5, 0, 1'000)).id;
  shared(h.grant("r2", "rw", 6, 10, 1'000));
  h.release("r2", "rw", 6, 20);
  std::int64_t w = h.grant("w", "rw", 7, 30, 1'000).id;
  expect_only(h, "double grant", {r, w});
}

TEST(HistoryChecker, AReaderWhileAWriterHolds) {
  History h;
  std::int64_t w = h.grant("w", "rw", 5, 0, 1'000).id;
  std::int64_t r = shared(h.grant("r1", "rw", 6, 10, 1'000)).id;
  expect_only(h, "double grant", {w, r});
}

TEST(HistoryChecker, ReadersNeedNoTokenOrder) {
  // Granted side by side: the larger token may start first.
  History h;
  shared(h.grant("r1", "rw", 6, 0, 1'000));
  Op& r2 = shared(h.grant("r2", "rw", 5, 0, 1'000));
  r2.acquired_us = at(0) + 600;
  expect_clean(h);
}

TEST(HistoryChecker, ASemaphoreAtItsPermits) {
  History h;
  permit(h.grant("p", "pool", 5, 0, 1'000), 2);
  permit(h.grant("q", "pool", 6, 10, 1'000), 2);
  h.release("p", "pool", 5, 20);
  permit(h.grant("r", "pool", 7, 30, 1'000), 2);
  expect_clean(h);
}

TEST(HistoryChecker, ASemaphoreOverItsPermits) {
  History h;
  std::int64_t p = permit(h.grant("p", "pool", 5, 0, 1'000), 2).id;
  std::int64_t q = permit(h.grant("q", "pool", 6, 10, 1'000), 2).id;
  std::int64_t r = permit(h.grant("r", "pool", 7, 20, 1'000), 2).id;
  expect_only(h, "over permits", {p, q, r},
              "\"pool\": token 7 granted from " + std::to_string(at(20) + 500) +
                  " while 2 of 2 permits were held");
}

TEST(HistoryChecker, AKilledPermitHolderHoldsUntilItsExpiry) {
  History h;
  std::int64_t p = permit(h.grant("p", "pool", 5, 0, 100), 1).id;  // killed
  std::int64_t q = permit(h.grant("q", "pool", 6, 50, 100), 1).id;
  h.release("q", "pool", 6, 60);
  permit(h.grant("r", "pool", 7, 100, 100), 1);  // at p's expiry
  expect_only(h, "over permits", {p, q});
}

TEST(HistoryChecker, PermitsKeepTokenOrder) {
  // The clients' clocks cannot order these two; the server's can.
  History h;
  std::int64_t a = permit(h.grant("p", "pool", 6, 0, 1'000), 2).id;
  Op& b = permit(h.grant("q", "pool", 5, 0, 1'000), 2);
  b.acquired_us = at(0) + 600;
  expect_only(h, "token order", {b.id, a},
              "\"pool\": token 6 granted from " + std::to_string(at(0) + 500) +
                  ", before token 5 from " + std::to_string(at(0) + 600));
}

// --- Legal look-alikes --------------------------------------------------

TEST(HistoryChecker, SameOwnerAskingAgain) {
  History h;
  h.grant("p", "job", 5, 0, 100);
  h.grant("p", "job", 5, 50, 100, Outcome::ok, 0);
  h.grant("q", "job", 0, 120, 100, Outcome::busy);
  h.release("p", "job", 5, 140);
  h.grant("q", "job", 6, 160, 100);
  Verdict v = h.check();
  EXPECT_TRUE(v.violations.empty()) << report(v);
  EXPECT_EQ(v.figures.grants, 3);
}

TEST(HistoryChecker, HoldEndedByReleaseThenGrantedAgain) {
  History h;
  h.grant("p", "job", 5, 0, 10'000);
  h.release("p", "job", 5, 10);
  h.grant("q", "job", 6, 20, 10'000);
  expect_clean(h);
}

TEST(HistoryChecker, RefusedReleaseEndsNothing) {
  History h;
  std::int64_t a = h.grant("p", "job", 5, 0, 10'000).id;
  h.release("p", "job", 5, 10, Outcome::refused);
  std::int64_t b = h.grant("q", "job", 6, 20, 10'000).id;
  expect_only(h, "double grant", {a, b});
}

TEST(HistoryChecker, HoldEndedByForceReleaseThenGrantedAgain) {
  History h;
  h.grant("p", "job", 5, 0, 10'000);
  h.force_release("job", 10);
  h.grant("q", "job", 6, 20, 10'000);
  expect_clean(h);
}

TEST(HistoryChecker, ForceReleaseEndsOnlyHoldsStartedBeforeIt) {
  History h;
  h.grant("p", "job", 5, 0, 10'000);
  h.force_release("job", 10);
  h.grant("q", "job", 6, 20, 10'000);  // ends at 30.5 ms: force-released
  h.force_release("job", 30);
  std::int64_t c = h.grant("r", "job", 7, 40, 10'000).id;
  std::int64_t d = h.grant("s", "job", 8, 50, 10'000).id;
  expect_only(h, "double grant", {c, d});
}

TEST(HistoryChecker, HoldEndedByExpiryThenGrantedAgain) {
  History h;
  h.grant("p", "job", 5, 0, 100);
  h.grant("q", "job", 6, 100, 100);  // exactly at the expiry
  expect_clean(h);
}

TEST(HistoryChecker, UnknownGrantThatOverlaps) {
  History h;
  h.grant("p", "job", 5, 0, 1'000);
  h.grant("q", "job", 0, 100, 1'000, Outcome::unknown);
  Verdict v = h.check();
  EXPECT_TRUE(v.violations.empty()) << report(v);
  EXPECT_EQ(v.figures.grants, 1);
  EXPECT_EQ(v.figures.unknown, 1);
}

TEST(HistoryChecker, UnknownReleaseInvokedBeforeTheNextGrant) {
  History h;
  h.grant("p", "job", 5, 0, 1'000);
  h.release("p", "job", 5, 100, Outcome::unknown);
  h.grant("q", "job", 6, 200, 1'000);
  expect_clean(h);

  History after;  // invoked after the next grant: it cannot excuse it
  std::int64_t a = after.grant("p", "job", 5, 0, 1'000).id;
  std::int64_t b = after.grant("q", "job", 6, 200, 1'000).id;
  after.release("p", "job", 5, 300, Outcome::unknown);
  expect_only(after, "double grant", {a, b});
}

TEST(HistoryChecker, UnknownForceReleaseInvokedBeforeTheNextGrant) {
  History h;
  h.grant("p", "job", 5, 0, 1'000);
  h.force_release("job", 100, Outcome::unknown);
  h.grant("q", "job", 6, 200, 1'000);
  expect_clean(h);
}

TEST(HistoryChecker, UnknownForceReleaseThatReachedTheServerLate) {
  // Sent while p held the lease; it ended q's hold, granted meanwhile.
  History h;
  h.grant("p", "job", 5, 0, 1'000);
  h.force_release("job", 30, Outcome::unknown);
  h.release("p", "job", 5, 40);
  h.grant("q", "job", 6, 45, 1'000);
  std::int64_t c = h.grant("r", "job", 7, 100, 1'000).id;
  std::int64_t d = h.grant("s", "job", 8, 110, 1'000).id;  // not excused
  expect_only(h, "double grant", {c, d});
}

TEST(HistoryChecker, UnknownWriteThatLandedAsTheFinalRow) {
  History h;
  h.row(Call::initial_row, "job", "init", 0, 0);
  h.write("p", "job", 5, "p1", 10);
  h.write("p", "job", 5, "p2", 20, Outcome::unknown);
  h.row(Call::final_row, "job", "p2", 5, 30);
  expect_clean(h);
}

TEST(HistoryChecker, UnknownWriteWithASmallerTokenCannotHaveLanded) {
  History h;
  h.write("p", "job", 5, "p1", 10, Outcome::unknown);
  std::int64_t w = h.write("q", "job", 6, "q1", 20).id;
  std::int64_t fin = h.row(Call::final_row, "job", "p1", 5, 30).id;
  std::int64_t unknown = h.ops().front().id;
  expect_only(h, "final row", {fin, unknown, w});
}

TEST(HistoryChecker, RefusedStaleWrite) {
  History h;
  h.row(Call::initial_row, "job", "init", 0, 0);
  h.write("q", "job", 6, "q1", 10);
  h.write("p", "job", 5, "p1", 20, Outcome::refused);
  h.write("p", "job", 5, "p2", 30, Outcome::failed);
  h.row(Call::final_row, "job", "q1", 6, 40);
  Verdict v = h.check();
  EXPECT_TRUE(v.violations.empty()) << report(v);
  EXPECT_EQ(v.figures.writes, 1);
}

TEST(HistoryChecker, NoWritesLeaveTheInitialRow) {
  History h;
  h.row(Call::initial_row, "job", "init", 4, 0);
  h.grant("p", "job", 5, 10, 100);
  h.write("p", "job", 5, "p1", 20, Outcome::failed);
  h.row(Call::final_row, "job", "init", 4, 30);
  expect_clean(h);
}

TEST(HistoryChecker, ConcurrentWritesOfOneTokenMayLandInEitherOrder) {
  History h;
  Op& a = h.write("p", "job", 5, "p1", 10);
  a.completed_us = at(30);
  h.write("p", "job", 5, "p2", 20);
  h.row(Call::final_row, "job", "p1", 5, 40);
  expect_clean(h);
}

// --- Figures and the report ---------------------------------------------

TEST(HistoryChecker, Figures) {
  History h;
  h.row(Call::initial_row, "a", "init", 0, 0);
  h.grant("p", "a", 1, 10, 100);
  h.write("p", "a", 1, "p1", 20);
  h.release("p", "a", 1, 30, Outcome::unknown);
  h.grant("q", "b", 2, 40, 100);
  h.grant("r", "b", 0, 50, 100, Outcome::busy);
  h.row(Call::final_row, "a", "p1", 1, 200);
  Verdict v = h.check();
  EXPECT_TRUE(v.violations.empty()) << report(v);
  EXPECT_EQ(v.figures.ops, 7);
  EXPECT_EQ(v.figures.grants, 2);
  EXPECT_EQ(v.figures.writes, 1);
  EXPECT_EQ(v.figures.unknown, 1);
  EXPECT_EQ(v.figures.names, 2);
  EXPECT_EQ(report(v),
            "7 ops, 2 acknowledged grants, 1 accepted writes, 1 unknown "
            "outcomes, 2 names: no violation\n");
}

TEST(HistoryChecker, ReportShowsAtMostTwentyViolationsAndTheirCount) {
  History h;
  // 25 names, each granted twice at once: 25 double grants.
  for (int k = 0; k < 25; ++k) {
    std::string name = "n" + std::to_string(100 + k);
    h.grant("p", name, 2 * k + 1, 0, 1'000);
    h.grant("q", name, 2 * k + 2, 0, 1'000);
  }
  Verdict v = h.check();
  ASSERT_EQ(v.violations.size(), 25u);
  for (const Violation& x : v.violations) EXPECT_EQ(x.rule, "double grant");
  // Name by name, in byte order.
  EXPECT_EQ(v.violations.front().ops.front().name, "n100");
  EXPECT_EQ(v.violations.back().ops.front().name, "n124");
  std::string text = report(v);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "50 ops, 50 acknowledged grants, 0 accepted writes, 0 unknown "
            "outcomes, 25 names: 25 violations");
  std::size_t shown = 0;
  for (std::size_t p = 0;
       (p = text.find("\ndouble grant: ", p)) != std::string::npos; ++p)
    ++shown;
  EXPECT_EQ(shown, kReportedViolations);
  EXPECT_NE(
      text.find("\n  " + describe(v.violations.front().ops.front()) + "\n"),
      std::string::npos);
  const std::string rest = "\n... and 5 more violations\n";
  ASSERT_GT(text.size(), rest.size());
  EXPECT_EQ(text.substr(text.size() - rest.size()), rest);
}

TEST(HistoryChecker, KeepsTheFirstViolationsAndCountsThemAll) {
  History h;
  // One grant of a large token, then 10,005 grants of smaller ones.
  h.grant("p", "a", 1'000'000, 0, 100);
  for (int k = 0; k < 10'005; ++k)
    h.grant("q", "b" + std::to_string(k), k + 1, 10 + k, 100);
  Verdict v = h.check();
  EXPECT_EQ(v.figures.violations, 10'005);
  ASSERT_EQ(v.violations.size(), kKeptViolations);
  EXPECT_EQ(v.violations.back().ops.back().token,
            static_cast<std::int64_t>(kKeptViolations));
  std::string text = report(v);
  EXPECT_NE(text.find(" names: 10005 violations\n"), std::string::npos);
  const std::string rest = "\n... and 9985 more violations\n";
  ASSERT_GT(text.size(), rest.size());
  EXPECT_EQ(text.substr(text.size() - rest.size()), rest);
}

// --- read_files and dlock_history_check ----------------------------------

class HistoryFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "dlock-history.XXXXXX")
            .string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Each owner's ops as its client logs them, in the file <owner>.jsonl.
  void log(const History& h) {
    std::map<std::string, std::string> files;
    for (const Op& op : h.ops()) {
      std::string& text = files[op.client];
      text += invoke_line(op) + "\n";
      if (op.outcome != Outcome::unknown) text += complete_line(op) + "\n";
    }
    for (const auto& [client, text] : files) file(client + ".jsonl", text);
  }

  // dlock_history_check's exit status with `args`; its output (stdout and
  // stderr) in `output`.
  int check_command(const std::string& args, std::string& output) {
    std::string command =
        std::string(DLOCK_HISTORY_CHECK) + " " + args + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("popen failed");
    output.clear();
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
      output.append(buffer, n);
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::filesystem::path dir_;
};

Op granted(std::int64_t id, const std::string& client) {
  Op op;
  op.id = id;
  op.client = client;
  op.call = Call::grant;
  op.name = "job";
  op.owner = client;
  op.ttl_ms = 1'000;
  op.invoked_us = at(id);
  op.outcome = Outcome::ok;
  op.token = 10 + id;
  op.completed_us = at(id) + 1'000;
  op.acquired_us = at(id) + 500;
  op.expires_us = at(id) + 1'000'500;
  return op;
}

TEST_F(HistoryFiles, MergesInvokeAndComplete) {
  Op a = granted(1, "p");
  Op b = granted(2, "q");
  std::string p =
      file("p.jsonl", invoke_line(a) + "\n" + complete_line(a) + "\n");
  std::string q =
      file("q.jsonl", invoke_line(b) + "\n" + complete_line(b) + "\n");
  std::vector<Op> ops = read_files({p, q});
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(describe(ops[0]), describe(a));
  EXPECT_EQ(describe(ops[1]), describe(b));
  EXPECT_EQ(ops[1].outcome, Outcome::ok);
  EXPECT_EQ(ops[1].token, 12);
  EXPECT_EQ(ops[1].expires_us, b.expires_us);
}

TEST_F(HistoryFiles, AnInvokeWithoutItsCompleteIsUnknown) {
  Op a = granted(1, "p");
  Op b = granted(2, "p");
  std::string p = file("p.jsonl", invoke_line(a) + "\n" + invoke_line(b) +
                                      "\n" + complete_line(a) + "\n");
  std::vector<Op> ops = read_files({p});
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].outcome, Outcome::ok);
  EXPECT_EQ(ops[1].id, 2);
  EXPECT_EQ(ops[1].outcome, Outcome::unknown);
  EXPECT_EQ(ops[1].completed_us, 0);
  EXPECT_EQ(check(ops).figures.unknown, 1);
}

TEST_F(HistoryFiles, ATornLastLineIsTolerated) {
  Op a = granted(1, "p");
  std::string line = complete_line(a);
  std::string p =
      file("p.jsonl", invoke_line(a) + "\n" + line.substr(0, line.size() / 2));
  std::vector<Op> ops = read_files({p});
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].outcome, Outcome::unknown);
}

TEST_F(HistoryFiles, AMalformedMiddleLineNamesItsFileAndLine) {
  Op a = granted(1, "p");
  Op b = granted(2, "p");
  std::string line = invoke_line(b);
  std::string p =
      file("p.jsonl", invoke_line(a) + "\n" + line.substr(0, line.size() / 2) +
                          "\n" + complete_line(a) + "\n");
  try {
    read_files({p});
    ADD_FAILURE() << "read_files accepted a malformed line";
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_EQ(what.substr(0, p.size() + 3), p + ":2:") << what;
  }
}

TEST_F(HistoryFiles, CheckCommandOnACleanDirectory) {
  History h;
  h.grant("p", "job", 5, 0, 100);
  h.release("p", "job", 5, 10, Outcome::unknown);
  h.grant("q", "job", 6, 20, 100);
  log(h);
  file("notes.txt", "not a history\n");
  std::string out;
  EXPECT_EQ(check_command(dir_.string(), out), 0) << out;
  EXPECT_EQ(out,
            "3 ops, 2 acknowledged grants, 0 accepted writes, 1 unknown "
            "outcomes, 1 names: no violation\n");
}

TEST_F(HistoryFiles, CheckCommandOnViolations) {
  History h;
  h.grant("p", "job", 5, 0, 100);
  h.grant("q", "job", 6, 20, 100);
  log(h);
  std::string out;
  // The files, named one by one, are one history.
  EXPECT_EQ(
      check_command(
          (dir_ / "p.jsonl").string() + " " + (dir_ / "q.jsonl").string(), out),
      1)
      << out;
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "2 ops, 2 acknowledged grants, 0 accepted writes, 0 unknown "
            "outcomes, 1 names: 1 violation");
  EXPECT_NE(out.find("\ndouble grant: \"job\": token 5"), std::string::npos)
      << out;
}

TEST_F(HistoryFiles, CheckCommandHoldsARunToItsPromises) {
  History h;
  h.grant("p", "job", 5, 0, 100);
  h.release("p", "job", 5, 10, Outcome::refused);
  log(h);
  std::string out;
  EXPECT_EQ(check_command(dir_.string(), out), 0) << out;
  // A refused release breaks no rule, but a run without faults has none.
  EXPECT_EQ(check_command("--fault-free " + dir_.string(), out), 1) << out;
  EXPECT_NE(out.find("\ncall failed: \"job\": release refused\n"),
            std::string::npos)
      << out;
  // A grant without its write and renewal is no cycle.
  EXPECT_EQ(check_command("--cycles " + dir_.string(), out), 1) << out;
  EXPECT_NE(out.find("\ncycle: \"job\": 0 writes of token 5, expected 1\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(check_command("--cycles", out), 2);  // no PATH
  EXPECT_EQ(out.substr(0, 27), "usage: dlock_history_check ");
}

TEST_F(HistoryFiles, CheckCommandOnBadInput) {
  std::string out;
  EXPECT_EQ(check_command("", out), 2);
  EXPECT_EQ(out.substr(0, 27), "usage: dlock_history_check ");
  EXPECT_EQ(check_command((dir_ / "none.jsonl").string(), out), 2);
  EXPECT_EQ(check_command(dir_.string(), out), 2);  // no *.jsonl in it
  EXPECT_EQ(out, "dlock_history_check: no *.jsonl history in " + dir_.string() +
                     "\n");
  Op a = granted(1, "p");
  std::string bad =
      file("p.jsonl", "{\"type\": \"invoke\"\n" + invoke_line(a) + "\n");
  EXPECT_EQ(check_command(dir_.string(), out), 2);
  EXPECT_EQ(out.substr(0, 21 + bad.size() + 3),
            "dlock_history_check: " + bad + ":1:")
      << out;
}

}  // namespace
}  // namespace dlock::history
