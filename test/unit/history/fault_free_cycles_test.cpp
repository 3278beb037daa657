// The history checker's rules for runs that promise more (checker.h's
// Expect: no fault injected, every cycle complete), and the server-clock
// rules a pooler or hand-off stress run relies on, on hand-made histories
// of the pooler stress run's cycles: a clean one, and one for each rule
// broken.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "checker.h"
#include "history.h"

namespace dlock::history {
namespace {

constexpr std::int64_t kTtlMs = 30'000;
constexpr std::int64_t kTtlUs = kTtlMs * 1'000;
constexpr Expect kPromised{true, true};

// A call the server ran at `at` (its clock): sent 100 us before and
// answered 100 us after, on the client's clock (one machine, one clock).
Op call(Call c, const std::string& owner, const std::string& name,
        std::int64_t token, std::int64_t at) {
  static std::int64_t next_id = 1;
  Op op;
  op.id = next_id++;
  op.client = owner;
  op.call = c;
  op.outcome = Outcome::ok;
  op.name = name;
  op.owner = owner;
  op.token = token;
  op.invoked_us = at - 100;
  op.completed_us = at + 100;
  return op;
}

// A cycle as the pooler stress run logs it: granted at `at` for 30 s,
// written 1 ms later, renewed 2 ms later (the expiry moves 2 ms on),
// released 3 ms later.
std::vector<Op> cycle(const std::string& owner, const std::string& name,
                      std::int64_t token, std::int64_t at) {
  Op g = call(Call::grant, owner, name, token, at);
  g.ttl_ms = kTtlMs;
  g.acquired_us = at;
  g.expires_us = at + kTtlUs;

  Op w = call(Call::write, owner, name, token, at + 1'000);
  w.value = owner + "/" + std::to_string(token);
  w.server_us = at + 1'000;

  Op n = call(Call::renew, owner, name, token, at + 2'000);
  n.ttl_ms = kTtlMs;
  n.acquired_us = at;
  n.expires_us = at + 2'000 + kTtlUs;

  Op r = call(Call::release, owner, name, token, at + 3'000);
  r.server_us = at + 3'000;
  return {g, w, n, r};
}

Op row(Call c, const std::string& name, const std::string& value,
       std::int64_t fence, std::int64_t at) {
  Op op = call(c, "rows", name, fence, at);
  op.owner.clear();
  op.value = value;
  return op;
}

void append(std::vector<Op>& history, const std::vector<Op>& ops) {
  history.insert(history.end(), ops.begin(), ops.end());
}

// Rows of "a", "b" and "c" read before the run.
std::vector<Op> initial_rows() {
  return {row(Call::initial_row, "a", "initial", 0, 900'000),
          row(Call::initial_row, "b", "initial", 0, 900'000),
          row(Call::initial_row, "c", "initial", 0, 900'000)};
}

// Three names: "a" held by tokens 1, 3 and 4 back to back (3 starts the
// moment 1 ends), "b" by token 2 meanwhile, "c" never; no final rows.
std::vector<Op> run() {
  std::vector<Op> h = initial_rows();
  append(h, cycle("stress-1", "a", 1, 1'000'000));
  append(h, cycle("stress-2", "b", 2, 1'001'000));
  append(h, cycle("stress-2", "a", 3, 1'003'000));
  append(h, cycle("stress-3", "a", 4, 1'010'000));
  return h;
}

struct Row {
  std::string name;
  std::string value;
  std::int64_t fence;
};

// The final rows the clean run leaves, but for those in `other`.
std::vector<Op> final_rows(const std::vector<Row>& other = {}) {
  std::vector<Op> rows = {
      row(Call::final_row, "a", "stress-3/4", 4, 40'000'000),
      row(Call::final_row, "b", "stress-2/2", 2, 40'000'000),
      row(Call::final_row, "c", "initial", 0, 40'000'000)};
  for (Op& op : rows)
    for (const Row& r : other)
      if (op.name == r.name) {
        op.value = r.value;
        op.token = r.fence;
      }
  return rows;
}

std::vector<Op> clean_history() {
  std::vector<Op> h = run();
  append(h, final_rows());
  return h;
}

std::vector<std::string> rules(const Verdict& v) {
  std::vector<std::string> out;
  for (const Violation& x : v.violations) out.push_back(x.rule);
  return out;
}

std::vector<std::string> rules(const std::vector<Op>& h) {
  return rules(check(h, kPromised));
}

std::vector<std::int64_t> tokens(const Violation& v) {
  std::vector<std::int64_t> out;
  for (const Op& op : v.ops) out.push_back(op.token);
  return out;
}

// Makes op a call that failed.
void fail(Op& op, Outcome outcome, const std::string& sqlstate,
          const std::string& note) {
  op.outcome = outcome;
  op.sqlstate = sqlstate;
  op.note = note;
}

// The op of `c` with `token` in h.
Op& find(std::vector<Op>& h, Call c, std::int64_t token) {
  for (Op& op : h) {
    if (op.call == c && op.token == token) return op;
  }
  throw std::logic_error("no such op");
}

TEST(FaultFreeCycles, ACleanRunHasNoViolations) {
  Verdict v = check(clean_history(), kPromised);
  EXPECT_EQ(rules(v), std::vector<std::string>{}) << report(v);
  EXPECT_EQ(v.figures.grants, 4);
  EXPECT_EQ(v.figures.writes, 4);
}

TEST(FaultFreeCycles, OverlappingHolds) {
  std::vector<Op> h = clean_history();
  // Token 3 granted 1 us before token 1's release read the clock.
  find(h, Call::release, 1).server_us = 1'003'001;
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"double grant"});
  EXPECT_EQ(tokens(v.violations[0]), (std::vector<std::int64_t>{1, 3}));
}

TEST(FaultFreeCycles, TokensOutOfGrantOrder) {
  std::vector<Op> h = initial_rows();
  append(h, cycle("stress-1", "a", 1, 1'000'000));
  // Token 3 granted at the very moment token 1 was: not after it.
  append(h, cycle("stress-2", "a", 3, 1'000'000));
  append(h, final_rows({{"a", "stress-2/3", 3}, {"b", "initial", 0}}));
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"double grant"});
  EXPECT_EQ(tokens(v.violations[0]), (std::vector<std::int64_t>{1, 3}));
}

TEST(FaultFreeCycles, TokensOutOfGrantOrderWithoutAnOverlap) {
  // Token 3's hold ended before token 1's began: the holds are a line,
  // but their tokens go down.
  std::vector<Op> h;
  append(h, cycle("stress-2", "a", 3, 1'000'000));
  append(h, cycle("stress-1", "a", 1, 1'003'000));
  // The clients' clocks cannot order them: both calls were in flight.
  for (Op& op : h) {
    op.invoked_us = 900'000;
    op.completed_us = 1'100'000;
  }
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"token order"});
  EXPECT_EQ(tokens(v.violations[0]), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(v.violations[0].what,
            "\"a\": token 3 granted from 1000000, before token 1 from "
            "1003000");
}

TEST(FaultFreeCycles, ATokenGrantedTwice) {
  std::vector<Op> h = run();
  append(h, cycle("stress-4", "c", 4, 2'000'000));
  append(h, final_rows({{"c", "stress-4/4", 4}}));
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v).front(), "token regression") << report(v);
  EXPECT_EQ(v.violations[0].ops[0].owner, "stress-3");
  EXPECT_EQ(v.violations[0].ops[1].owner, "stress-4");
}

TEST(FaultFreeCycles, ARejectedWrite) {
  std::vector<Op> h = run();
  Op& w = find(h, Call::write, 4);
  fail(w, Outcome::refused, "LD001", "stale fencing token");
  w.server_us = 0;
  append(h, final_rows({{"a", "stress-2/3", 3}}));  // the last accepted write
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"call failed"});
  EXPECT_EQ(v.violations[0].what,
            "\"a\": write refused (LD001): stale fencing token");
  EXPECT_EQ(tokens(v.violations[0]), std::vector<std::int64_t>{4});
}

TEST(FaultFreeCycles, AWriteThatMatchedNoRow) {
  std::vector<Op> h = run();
  fail(find(h, Call::write, 2), Outcome::failed, "", "updated 0 rows");
  append(h, final_rows({{"b", "initial", 0}}));
  EXPECT_EQ(rules(h), std::vector<std::string>{"call failed"});
}

TEST(FaultFreeCycles, AReleaseThatReturnedFalse) {
  std::vector<Op> h = clean_history();
  Op& r = find(h, Call::release, 2);
  fail(r, Outcome::refused, "", "");
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"call failed"});
  EXPECT_EQ(v.violations[0].what, "\"b\": release refused");
  EXPECT_EQ(v.violations[0].ops[0].id, r.id);
}

TEST(FaultFreeCycles, AReleaseAtTheRenewedExpiry) {
  std::vector<Op> h = clean_history();
  Op& r = find(h, Call::release, 2);
  r.server_us = 1'001'000 + 2'000 + kTtlUs;
  r.invoked_us = r.server_us - 100;
  r.completed_us = r.server_us + 100;
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"late release"});
  EXPECT_EQ(v.violations[0].ops[0].call, Call::renew);
  EXPECT_EQ(tokens(v.violations[0]), (std::vector<std::int64_t>{2, 2}));
}

TEST(FaultFreeCycles, AReleaseBeforeTheRenewedExpiryButAfterTheGrantsIsFine) {
  std::vector<Op> h = clean_history();
  Op& r = find(h, Call::release, 2);
  r.server_us = 1'001'000 + 1'000 + kTtlUs;
  r.invoked_us = r.server_us - 100;
  r.completed_us = r.server_us + 100;
  Verdict v = check(h, kPromised);
  EXPECT_EQ(rules(v), std::vector<std::string>{}) << report(v);
}

TEST(FaultFreeCycles, ARenewalThatChangedTheGrant) {
  std::vector<Op> h = clean_history();
  find(h, Call::renew, 1).acquired_us += 1;
  find(h, Call::renew, 2).expires_us = 1'001'000 + kTtlUs - 1;
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), (std::vector<std::string>{"renewal", "renewal"}));
  EXPECT_EQ(v.violations[0].what,
            "\"a\": the renewal of token 1 changed acquired_at from 1000000 "
            "to 1000001");
  EXPECT_EQ(v.violations[1].what,
            "\"b\": the renewal of token 2 moved the expiry back from " +
                std::to_string(1'001'000 + kTtlUs) + " to " +
                std::to_string(1'001'000 + kTtlUs - 1));
}

TEST(FaultFreeCycles, ARenewalWithAShorterTtlMayBringTheExpiryEarlier) {
  std::vector<Op> h = clean_history();
  Op& n = find(h, Call::renew, 2);
  n.ttl_ms = 1'000;
  n.expires_us = 1'003'000 + 1'000'000;
  EXPECT_EQ(rules(h), std::vector<std::string>{});
}

TEST(FaultFreeCycles, AWriteOutsideItsHold) {
  std::vector<Op> h = clean_history();
  find(h, Call::write, 1).server_us = 1'000'000 - 1;
  find(h, Call::write, 2).server_us = 1'001'000 + 3'001;
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v),
            (std::vector<std::string>{"outside hold", "outside hold"}));
  EXPECT_EQ(tokens(v.violations[0]), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(tokens(v.violations[1]), (std::vector<std::int64_t>{2, 2}));
}

TEST(FaultFreeCycles, ACycleWithoutItsRelease) {
  std::vector<Op> h = clean_history();
  Op& r = find(h, Call::release, 2);
  h.erase(h.begin() + (&r - h.data()));
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"cycle"});
  EXPECT_EQ(v.violations[0].what, "\"b\": 0 releases of token 2, expected 1");
  EXPECT_EQ(tokens(v.violations[0]), std::vector<std::int64_t>{2});
}

TEST(FaultFreeCycles, CallsOfATokenNeverGranted) {
  std::vector<Op> h = run();
  std::vector<Op> stray = cycle("stress-9", "b", 7, 3'000'000);
  stray.erase(stray.begin());  // no grant
  append(h, stray);
  append(h, final_rows({{"b", "stress-9/7", 7}}));  // its write was accepted
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"cycle"});
  EXPECT_EQ(v.violations[0].what, "no grant of token 7");
  EXPECT_EQ(v.violations[0].ops.size(), 3u);
}

TEST(FaultFreeCycles, ACallUnderAnotherOwner) {
  std::vector<Op> h = clean_history();
  Op& n = find(h, Call::renew, 3);
  n.owner = "stress-5";
  n.client = "stress-5";
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"cycle"});
  EXPECT_EQ(v.violations[0].what,
            "\"a\": renew with token 3 by owner stress-5, granted for \"a\" "
            "to owner stress-2");
}

TEST(FaultFreeCycles, AFailedGrant) {
  std::vector<Op> h = clean_history();
  Op g = call(Call::grant, "stress-6", "c", 0, 2'000'000);
  g.ttl_ms = kTtlMs;
  fail(g, Outcome::failed, "08006",
       "server closed the connection unexpectedly");
  h.push_back(g);
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"call failed"});
  EXPECT_EQ(v.violations[0].what,
            "\"c\": grant failed (08006): server closed the connection "
            "unexpectedly");
}

TEST(FaultFreeCycles, ACallWithNoAnswer) {
  std::vector<Op> h = clean_history();
  Op& r = find(h, Call::release, 4);
  r.outcome = Outcome::unknown;
  r.completed_us = 0;
  r.server_us = 0;
  EXPECT_EQ(rules(h), std::vector<std::string>{"call failed"});
}

TEST(FaultFreeCycles, ABusyGrantIsNoFailure) {
  std::vector<Op> h = clean_history();
  Op g = call(Call::grant, "stress-6", "a", 0, 1'003'500);
  g.ttl_ms = kTtlMs;
  g.outcome = Outcome::busy;
  h.push_back(g);
  EXPECT_EQ(rules(h), std::vector<std::string>{});
}

TEST(FaultFreeCycles, AFinalRowThatIsNotTheLastWrite) {
  std::vector<Op> h = run();
  append(h, final_rows({{"a", "stress-2/3", 3}}));
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"lost write"});
  EXPECT_EQ(tokens(v.violations[0]), (std::vector<std::int64_t>{3, 3, 4}));
}

TEST(FaultFreeCycles, ARowNobodyWroteMustStayAsItWas) {
  std::vector<Op> h = run();
  append(h, final_rows({{"c", "initial", 9}}));
  EXPECT_EQ(rules(h), std::vector<std::string>{"final row"});
}

TEST(FaultFreeCycles, AMissingRow) {
  std::vector<Op> h = run();
  append(h, final_rows());
  Op& fin = h.back();
  fin.value.clear();
  fin.token = 0;
  fail(fin, Outcome::failed, "", "the row is missing");
  auto v = check(h, kPromised);
  ASSERT_EQ(rules(v), std::vector<std::string>{"call failed"});
  EXPECT_EQ(v.violations[0].what,
            "\"c\": final_row failed: the row is missing");
}

TEST(FaultFreeCycles, WithoutThePromisesOnlyTheSafetyRulesApply) {
  std::vector<Op> h = clean_history();
  fail(find(h, Call::write, 4), Outcome::refused, "LD001", "stale");
  find(h, Call::write, 1).server_us = 1'000'000 + 3'001;
  h.erase(h.begin() + 3 + 2);  // token 1's renewal
  for (Op& op : h)
    if (op.name == "a" && op.call == Call::final_row) {
      op.value = "stress-2/3";
      op.token = 3;
    }
  Verdict v = check(h);
  EXPECT_EQ(rules(v), std::vector<std::string>{}) << report(v);
  EXPECT_EQ(rules(h),
            (std::vector<std::string>{"outside hold", "call failed", "cycle"}));
}

}  // namespace
}  // namespace dlock::history
