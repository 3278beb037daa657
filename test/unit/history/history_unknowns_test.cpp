// The failure runs' checker (test/history/checker.h) on what the soak met:
// an owner asking again for a hold it has, and a renewal or a grant whose
// answer never came, which may have brought a hold's expiry earlier.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "checker.h"
#include "history.h"

namespace dlock::history {
namespace {

constexpr std::int64_t kMs = 1'000;

Op call(Call c, const std::string& owner, const std::string& name,
        std::int64_t token, std::int64_t invoked, std::int64_t completed,
        Outcome outcome = Outcome::ok) {
  static std::int64_t id = 0;
  Op op;
  op.id = ++id;
  op.client = owner;
  op.call = c;
  op.outcome = outcome;
  op.name = name;
  op.owner = owner;
  op.token = token;
  op.invoked_us = invoked;
  op.completed_us = outcome == Outcome::unknown ? 0 : completed;
  return op;
}

// An acknowledged grant, held on the server from acquired for ttl_ms.
Op grant(const std::string& owner, const std::string& name, std::int64_t token,
         std::int64_t invoked, std::int64_t completed, std::int64_t acquired,
         std::int64_t ttl_ms) {
  Op op = call(Call::grant, owner, name, token, invoked, completed);
  op.ttl_ms = ttl_ms;
  op.acquired_us = acquired;
  op.expires_us = acquired + ttl_ms * kMs;
  return op;
}

// b's grant of "x", token 6, sent at ms and answered 20 ms later.
Op b_takes_x(std::int64_t ms) {
  return grant("b", "x", 6, ms * kMs, (ms + 20) * kMs, (ms + 15) * kMs, 500);
}

std::vector<std::string> rules(const std::vector<Op>& history) {
  std::vector<std::string> r;
  for (const Violation& v : check(history).violations) r.push_back(v.rule);
  return r;
}

// a asks again for "x" after b was granted a newer token on "y": a gets
// its old token 5 back, which is no new grant.
TEST(HistoryUnknowns, AskingAgainIsNoTokenRegression) {
  std::vector<Op> h = {
      grant("a", "x", 5, 0, 10 * kMs, 5 * kMs, 2'000),
      grant("b", "y", 6, 20 * kMs, 30 * kMs, 25 * kMs, 2'000),
      grant("a", "x", 5, 40 * kMs, 50 * kMs, 5 * kMs, 2'000),
  };
  EXPECT_EQ(rules(h), std::vector<std::string>{});
  // A new hold with an older token is one.
  h.push_back(grant("c", "z", 4, 60 * kMs, 70 * kMs, 65 * kMs, 2'000));
  EXPECT_EQ(rules(h), std::vector<std::string>{"token regression"});
}

// a holds "x" with token 5 for 2 s from 5 ms.
Op a_holds_x() { return grant("a", "x", 5, 0, 10 * kMs, 5 * kMs, 2'000); }

// A call by owner with a 100 ms ttl, sent at 20 ms, that got no answer.
Op unanswered(Call c, const std::string& owner) {
  Op op = call(c, owner, "x", c == Call::renew ? 5 : 0, 20 * kMs, 0,
               Outcome::unknown);
  op.ttl_ms = 100;
  return op;
}

const std::vector<std::string> kClean;
const std::vector<std::string> kDoubleGrant = {"double grant"};

// a's renewal got no answer: the hold may have ended 100 ms after it was
// sent, and b may take the lease from then on.
TEST(HistoryUnknowns, UnansweredRenewalMayEndTheHoldEarly) {
  const Op renew = unanswered(Call::renew, "a");
  EXPECT_EQ(rules({a_holds_x(), renew, b_takes_x(110)}), kClean);
  // Before the earliest expiry the renewal could have set, it is one.
  EXPECT_EQ(rules({a_holds_x(), renew, b_takes_x(80)}), kDoubleGrant);
  // An acknowledged renewal sent after it keeps the hold going.
  Op later = grant("a", "x", 5, 30 * kMs, 40 * kMs, 5 * kMs, 2'000);
  later.call = Call::renew;
  EXPECT_EQ(rules({a_holds_x(), renew, later, b_takes_x(110)}), kDoubleGrant);
}

// The same for a's grant of "x" with no answer: asking again renews.
TEST(HistoryUnknowns, UnansweredGrantByTheHolderMayEndTheHoldEarly) {
  EXPECT_EQ(rules({a_holds_x(), unanswered(Call::grant, "a"), b_takes_x(110)}),
            kClean);
  // Another owner's unanswered grant does not renew a's hold.
  EXPECT_EQ(rules({a_holds_x(), unanswered(Call::grant, "c"), b_takes_x(110)}),
            kDoubleGrant);
}

}  // namespace
}  // namespace dlock::history
