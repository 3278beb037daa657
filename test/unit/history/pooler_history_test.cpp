// The pooler stress run's checker, on hand-made histories: a clean one,
// and one for each rule broken.
#include "pooler_history.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace pooler_stress {
namespace {

constexpr std::int64_t kTtlUs = 30'000'000;

// A cycle as the run logs it: granted at `at` for 30 s, written 1 ms later,
// renewed 2 ms later (the expiry moves 2 ms on), released 3 ms later.
std::vector<Op> cycle(const std::string& owner, const std::string& name,
                      std::int64_t token, std::int64_t at) {
  Op g;
  g.kind = OpKind::grant;
  g.owner = owner;
  g.name = name;
  g.token = token;
  g.ok = true;
  g.acquired_us = at;
  g.expires_us = at + kTtlUs;
  g.busy_polls = 2;

  Op w = g;
  w.kind = OpKind::write;
  w.acquired_us = w.expires_us = 0;
  w.busy_polls = 0;
  w.clock_us = at + 1'000;
  w.value = owner + "/" + std::to_string(token);
  w.backend_pid = 101;

  Op n = g;
  n.kind = OpKind::renew;
  n.busy_polls = 0;
  n.expires_us = at + 2'000 + kTtlUs;

  Op r = w;
  r.kind = OpKind::release;
  r.value.clear();
  r.clock_us = at + 3'000;
  r.backend_pid = 102;
  return {g, w, n, r};
}

void append(std::vector<Op>& history, const std::vector<Op>& ops) {
  history.insert(history.end(), ops.begin(), ops.end());
}

// Two names: "a" held by tokens 1, 3 and 4 back to back (3 starts the
// moment 1 ends), "b" by token 2 meanwhile.
std::vector<Op> clean_history() {
  std::vector<Op> h;
  append(h, cycle("stress-1", "a", 1, 1'000'000));
  append(h, cycle("stress-2", "b", 2, 1'001'000));
  append(h, cycle("stress-2", "a", 3, 1'003'000));
  append(h, cycle("stress-3", "a", 4, 1'010'000));
  return h;
}

const Rows kBefore = {
    {"a", {"initial", 0}}, {"b", {"initial", 0}}, {"c", {"initial", 0}}};
const Rows kAfter = {
    {"a", {"stress-3/4", 4}}, {"b", {"stress-2/2", 2}}, {"c", {"initial", 0}}};

std::vector<std::string> whats(const std::vector<Violation>& vs) {
  std::vector<std::string> out;
  for (const Violation& v : vs) out.push_back(v.what);
  return out;
}

std::vector<std::int64_t> tokens(const Violation& v) {
  std::vector<std::int64_t> out;
  for (const Op& op : v.ops) out.push_back(op.token);
  return out;
}

// The violations of h as one line each: what, then its operations.
std::vector<std::string> report(const std::vector<Op>& h, const Rows& after) {
  std::vector<std::string> out;
  for (const Violation& v : check(h, kBefore, after)) {
    out.push_back(v.what);
    for (const Op& op : v.ops) out.push_back("  " + describe(op));
  }
  return out;
}

// Makes op a call that failed.
void fail(Op& op, const std::string& sqlstate, const std::string& error) {
  op.ok = false;
  op.sqlstate = sqlstate;
  op.error = error;
}

// The op of `kind` with `token` in h.
Op& find(std::vector<Op>& h, OpKind kind, std::int64_t token) {
  for (Op& op : h) {
    if (op.kind == kind && op.token == token) return op;
  }
  throw std::logic_error("no such op");
}

TEST(PoolerHistory, ACleanRunHasNoViolations) {
  EXPECT_EQ(whats(check(clean_history(), kBefore, kAfter)),
            std::vector<std::string>{});
}

TEST(PoolerHistory, SummaryFigures) {
  std::vector<Op> h = clean_history();
  find(h, OpKind::release, 4).clock_us = 1'010'000 + 7'500;
  find(h, OpKind::write, 2).backend_pid = 103;
  find(h, OpKind::renew, 3).ok = false;
  Summary s = summarize(h);
  EXPECT_EQ(s.cycles, 4);
  EXPECT_EQ(s.busy_polls, 8);
  EXPECT_EQ(s.max_hold_us, 7'500);
  EXPECT_EQ(s.errors, 1);
  EXPECT_EQ(s.backends, (std::set<int>{101, 102, 103}));
}

TEST(PoolerHistory, OverlappingHolds) {
  std::vector<Op> h = clean_history();
  // Token 3 granted 1 us before token 1's release read the clock.
  find(h, OpKind::release, 1).clock_us = 1'003'001;
  auto v = check(h, kBefore, kAfter);
  ASSERT_EQ(whats(v), std::vector<std::string>{
                          "granted before the hold before it ended"});
  EXPECT_EQ(tokens(v[0]), (std::vector<std::int64_t>{1, 1, 3}));
  EXPECT_EQ(v[0].ops[1].kind, OpKind::release);
}

TEST(PoolerHistory, TokensOutOfGrantOrder) {
  std::vector<Op> h;
  append(h, cycle("stress-1", "a", 1, 1'000'000));
  // Token 3 granted at the very moment token 1 was: not after it.
  append(h, cycle("stress-2", "a", 3, 1'000'000));
  Rows after = kAfter;
  after["a"] = {"stress-2/3", 3};
  after["b"] = {"initial", 0};
  auto v = check(h, kBefore, after);
  EXPECT_EQ(whats(v), (std::vector<std::string>{
                          "granted no later than the smaller token before it",
                          "granted before the hold before it ended"}));
  EXPECT_EQ(tokens(v[0]), (std::vector<std::int64_t>{1, 3}));
}

TEST(PoolerHistory, ATokenGrantedTwice) {
  std::vector<Op> h = clean_history();
  append(h, cycle("stress-4", "c", 4, 2'000'000));
  Rows after = kAfter;
  after["c"] = {"stress-4/4", 4};
  auto v = check(h, kBefore, after);
  ASSERT_EQ(whats(v).front(), "token granted twice");
  EXPECT_EQ(v[0].ops[0].owner, "stress-3");
  EXPECT_EQ(v[0].ops[1].owner, "stress-4");
}

TEST(PoolerHistory, ARejectedWrite) {
  std::vector<Op> h = clean_history();
  Op& w = find(h, OpKind::write, 4);
  fail(w, "LD001", "stale fencing token");
  w.clock_us = 0;
  w.backend_pid = 0;
  Rows after = kAfter;
  after["a"] = {"stress-2/3", 3};  // the last accepted write
  EXPECT_EQ(
      report(h, after),
      (std::vector<std::string>{"write failed",
                                "  stress-3 write a token 4 'stress-3/4': not "
                                "ok (LD001): stale fencing token"}));
}

TEST(PoolerHistory, AWriteThatMatchedNoRow) {
  std::vector<Op> h = clean_history();
  fail(find(h, OpKind::write, 2), "", "updated 0 rows");
  Rows after = kAfter;
  after["b"] = {"initial", 0};
  EXPECT_EQ(whats(check(h, kBefore, after)),
            std::vector<std::string>{"write failed"});
}

TEST(PoolerHistory, AReleaseThatReturnedFalse) {
  std::vector<Op> h = clean_history();
  fail(find(h, OpKind::release, 2), "", "dlock.release returned false");
  EXPECT_EQ(report(h, kAfter),
            (std::vector<std::string>{
                "release failed",
                "  stress-2 release b token 2 at 1.004000 on backend 102: not "
                "ok: dlock.release returned false"}));
}

TEST(PoolerHistory, AReleaseAtTheRenewedExpiry) {
  std::vector<Op> h = clean_history();
  find(h, OpKind::release, 2).clock_us = 1'001'000 + 2'000 + kTtlUs;
  auto v = check(h, kBefore, kAfter);
  ASSERT_EQ(whats(v),
            std::vector<std::string>{"released at or after the hold's expiry"});
  EXPECT_EQ(tokens(v[0]), (std::vector<std::int64_t>{2, 2}));
}

TEST(PoolerHistory, AReleaseBeforeTheRenewedExpiryButAfterTheGrantsIsFine) {
  std::vector<Op> h = clean_history();
  find(h, OpKind::release, 2).clock_us = 1'001'000 + 1'000 + kTtlUs;
  EXPECT_EQ(whats(check(h, kBefore, kAfter)), std::vector<std::string>{});
}

TEST(PoolerHistory, ARenewalThatChangedTheGrant) {
  std::vector<Op> h = clean_history();
  find(h, OpKind::renew, 1).acquired_us += 1;
  find(h, OpKind::renew, 2).expires_us = 1'001'000 + kTtlUs - 1;
  EXPECT_EQ(whats(check(h, kBefore, kAfter)),
            (std::vector<std::string>{"the renewal changed acquired_at",
                                      "the renewal moved the expiry back"}));
}

TEST(PoolerHistory, AWriteOutsideItsHold) {
  std::vector<Op> h = clean_history();
  find(h, OpKind::write, 1).clock_us = 1'000'000 - 1;
  find(h, OpKind::write, 2).clock_us = 1'001'000 + 3'001;
  EXPECT_EQ(whats(check(h, kBefore, kAfter)),
            (std::vector<std::string>{"written outside its hold",
                                      "written outside its hold"}));
}

TEST(PoolerHistory, ACycleWithoutItsRelease) {
  std::vector<Op> h = clean_history();
  h.erase(h.begin() + 7);  // token 2's release
  auto v = check(h, kBefore, kAfter);
  ASSERT_EQ(whats(v),
            std::vector<std::string>{"0 releases of one grant, expected 1"});
  EXPECT_EQ(tokens(v[0]), std::vector<std::int64_t>{2});
}

TEST(PoolerHistory, CallsOfATokenNeverGranted) {
  std::vector<Op> h = clean_history();
  std::vector<Op> stray = cycle("stress-9", "b", 7, 3'000'000);
  stray.erase(stray.begin());  // no grant
  append(h, stray);
  auto v = check(h, kBefore, kAfter);
  ASSERT_EQ(whats(v), std::vector<std::string>{"no grant of token 7"});
  EXPECT_EQ(v[0].ops.size(), 3u);
}

TEST(PoolerHistory, ACallUnderAnotherOwner) {
  std::vector<Op> h = clean_history();
  find(h, OpKind::renew, 3).owner = "stress-5";
  EXPECT_EQ(
      whats(check(h, kBefore, kAfter)),
      std::vector<std::string>{"its token's grant has another name or owner"});
}

TEST(PoolerHistory, AFailedGrant) {
  std::vector<Op> h = clean_history();
  Op g;
  g.kind = OpKind::grant;
  g.owner = "stress-6";
  g.name = "c";
  fail(g, "08006", "server closed the connection unexpectedly");
  h.push_back(g);
  EXPECT_EQ(report(h, kAfter),
            (std::vector<std::string>{
                "grant failed",
                "  stress-6 grant c token 0 after 0 busy polls: not ok "
                "(08006): server closed the connection unexpectedly"}));
}

TEST(PoolerHistory, AFinalRowThatIsNotTheLastWrite) {
  Rows after = kAfter;
  after["a"] = {"stress-2/3", 3};
  auto v = check(clean_history(), kBefore, after);
  ASSERT_EQ(whats(v), std::vector<std::string>{
                          "the row of lease a ends as 'stress-2/3' fenced 3, "
                          "not 'stress-3/4' fenced 4"});
  EXPECT_EQ(tokens(v[0]), std::vector<std::int64_t>{4});
}

TEST(PoolerHistory, ARowNobodyWroteMustStayAsItWas) {
  Rows after = kAfter;
  after["c"] = {"initial", 9};
  EXPECT_EQ(whats(check(clean_history(), kBefore, after)),
            std::vector<std::string>{"the row of lease c ends as 'initial' "
                                     "fenced 9, not 'initial' fenced 0"});
}

TEST(PoolerHistory, AMissingRow) {
  Rows after = kAfter;
  after.erase("b");
  EXPECT_EQ(
      whats(check(clean_history(), kBefore, after)),
      std::vector<std::string>{"the row of lease b is missing after the run"});
}

TEST(PoolerHistory, DescribeAGrant) {
  EXPECT_EQ(describe(cycle("stress-1", "a", 1, 1'000'000)[0]),
            "stress-1 grant a token 1 acquired 1.000000 expires 31.000000 "
            "after 2 busy polls");
}

}  // namespace
}  // namespace pooler_stress
