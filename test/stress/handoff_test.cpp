// Hand-off stress test against a live server (PGHOST/PGPORT/PGDATABASE).
//
// Eight clients, each on its own connection and with its default owner,
// pass one lease around: each loops dlock.acquire (ttl 30 s, timeout 60 s),
// then at once dlock.release with the token it got. A hand-off is the time
// from a release statement returning to the next grant (the grant with the
// next-larger token) returning, both read from this process's steady clock.
// A waiter must be granted the lease as soon as it is released: woken by
// the release, not by a timer. Nothing but the release wakes it before the
// 30 s ttl runs out, so a lost wake-up costs seconds, and every hand-off
// must take under 1 s: well clear of a busy machine's scheduling and
// fsync stalls (one of 114 ms was seen on a 2-core machine), well under
// any expiry. How fast hand-offs are is measured by bench/handoff.sh.
//
// Every grant and release is logged as a history (test/history/history.h)
// and the line of holds is judged by the history checker, on the server's
// clock, exactly: a hold starts at the grant's acquired_at and ends at the
// clock_timestamp() its release statement read after dlock.release
// returned (before it commits, so before any other session can see the
// lease free). No two holds overlap, a larger token is never granted
// first, and, as nothing disturbs the clients, every call is answered ok
// and every release comes before its own expiry (checker.h's
// Expect::fault_free).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <dlock/pq.h>
#include "checker.h"
#include "history.h"
#include "stress_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using dlock::history::Call;
using dlock::history::Op;
using dlock::history::Outcome;
using std::chrono::milliseconds;

constexpr char kLease[] = "handoff-stress";
constexpr std::int64_t kTtlMs = 30'000;
constexpr int kClients = 8;
constexpr int kCyclesPerClient = 2'000;
constexpr auto kMaxHandoff = milliseconds(1000);
// Clients start no new cycle after this; with acquire's 60 s timeout the
// test ends within two minutes even if hand-offs stall.
constexpr auto kRunBudget = milliseconds(60'000);
// Hand-offs over the bound listed in the failure message.
constexpr std::size_t kSlowKept = 5;

// The server's timestamps come as microseconds since the Unix epoch
// (extract gives numeric, so the conversion is exact).
constexpr char kAcquire[] =
    "SELECT l.token,"
    "       (extract(epoch FROM l.acquired_at) * 1000000)::bigint,"
    "       (extract(epoch FROM l.expires_at) * 1000000)::bigint"
    "  FROM dlock.acquire($1, '30 s', '60 s') AS l";
// The function in FROM runs before the select list, so clock_timestamp()
// is read after the release, within its transaction.
constexpr char kRelease[] =
    "SELECT r.released,"
    "       (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
    "  FROM dlock.release($1, $2::bigint) AS r(released)";

// One grant, for the hand-off times.
struct Hold {
  int client = 0;
  std::int64_t token = 0;
  Clock::time_point granted;  // acquire returned
  std::optional<Clock::time_point> release_returned;
};

// What one client saw. Written only by its own thread.
struct ClientLog {
  std::vector<Hold> holds;
  std::vector<Op> history;  // its grants and releases
  stress::ErrorLog errors;
};

// A call of this client's, invoked now.
Op invoke(int client, Call call, std::int64_t token) {
  Op op;
  op.client = op.owner = "client-" + std::to_string(client);
  op.call = call;
  op.name = kLease;
  op.token = token;
  if (call == Call::grant) op.ttl_ms = kTtlMs;
  op.invoked_us = dlock::history::now_us();
  return op;
}

void run_client(int index, Clock::time_point stop_at, stress::StartLine& start,
                ClientLog& log) {
  // The statement timeout is above acquire's: only a stuck server hits it.
  std::optional<dlock::pq::Connection> conn =
      stress::connect_at_start(start, "90s", log.errors);
  if (!conn) return;
  dlock::pq::Connection& c = *conn;
  log.holds.reserve(kCyclesPerClient);

  for (int cycle = 0; cycle < kCyclesPerClient && Clock::now() < stop_at;
       ++cycle) {
    // The call in flight: a failed one is logged with its error.
    Op op = invoke(index, Call::grant, 0);
    try {
      dlock::pq::Result g = c.exec(kAcquire, kLease);
      Hold h;
      h.granted = Clock::now();
      h.client = index;
      h.token = g.int64(0, 0);  // throws on NULL
      op.completed_us = dlock::history::now_us();
      op.outcome = Outcome::ok;
      op.token = h.token;
      op.acquired_us = g.int64(0, 1);
      op.expires_us = g.int64(0, 2);
      log.history.push_back(op);
      log.holds.push_back(h);

      op = invoke(index, Call::release, h.token);
      dlock::pq::Result r = c.exec(kRelease, kLease, h.token);
      log.holds.back().release_returned = Clock::now();
      op.completed_us = dlock::history::now_us();
      op.outcome = r.boolean(0, 0) ? Outcome::ok : Outcome::refused;
      op.server_us = r.int64(0, 1);
      log.history.push_back(op);
    } catch (const std::exception& e) {
      // No answer: it may or may not have taken effect.
      op.outcome = Outcome::unknown;
      op.note = e.what();
      log.history.push_back(op);
      log.errors.add("client " + std::to_string(index) + " cycle " +
                     std::to_string(cycle) + ": " + e.what());
      if (!c.ok()) return;
    }
  }
}

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

std::string ms_text(Clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms(d));
  return text;
}

// The nearest-rank percentile p of sorted, non-empty values.
Clock::duration percentile(const std::vector<Clock::duration>& sorted, int p) {
  std::size_t rank = (sorted.size() * p + 99) / 100;
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

TEST(Handoff, AcquireReleaseOneName) {
  {
    dlock::pq::Connection c;
    c.exec("SET client_min_messages = warning");
    c.exec("CREATE EXTENSION IF NOT EXISTS dlock");
  }

  std::vector<ClientLog> logs(kClients);
  stress::StartLine start(kClients);
  const auto began = Clock::now();
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
      threads.emplace_back(run_client, i, began + kRunBudget, std::ref(start),
                           std::ref(logs[i]));
    }
    for (std::thread& t : threads) t.join();
  }
  const double seconds = ms(Clock::now() - began) / 1000;

  stress::ErrorLog errors;
  std::vector<Hold> holds;
  std::vector<Op> history;
  for (const ClientLog& l : logs) {
    errors.add_all(l.errors);
    holds.insert(holds.end(), l.holds.begin(), l.holds.end());
    history.insert(history.end(), l.history.begin(), l.history.end());
  }
  EXPECT_EQ(errors.count, 0) << "errors:" << stress::join(errors.first);
  EXPECT_EQ(holds.size(), std::size_t{kClients} * kCyclesPerClient)
      << "not every cycle was granted within " << ms(kRunBudget) / 1000 << " s";
  ASSERT_FALSE(holds.empty());

  // The line of holds: no overlap, tokens in grant order, every call
  // answered ok, every release before its expiry.
  const dlock::history::Verdict verdict =
      dlock::history::check(history, {/*fault_free=*/true, /*cycles=*/false});
  EXPECT_EQ(verdict.figures.violations, 0)
      << "the holds do not form one line in token order: "
      << dlock::history::report(verdict);
  EXPECT_EQ(verdict.figures.grants, static_cast<std::int64_t>(holds.size()));

  std::sort(holds.begin(), holds.end(),
            [](const Hold& a, const Hold& b) { return a.token < b.token; });
  std::vector<Clock::duration> handoffs;
  std::int64_t to_another_client = 0;
  std::vector<std::string> slow;
  for (std::size_t i = 1; i < holds.size(); ++i) {
    const Hold& h = holds[i];
    const Hold& prev = holds[i - 1];
    // A release that failed leaves no hand-off to time.
    if (!prev.release_returned) continue;
    // The next holder's thread may run before the releasing thread reads
    // the clock: that hand-off took no time at all.
    const Clock::duration d =
        std::max(h.granted - *prev.release_returned, Clock::duration::zero());
    handoffs.push_back(d);
    if (h.client != prev.client) ++to_another_client;
    if (d > kMaxHandoff && slow.size() < kSlowKept) {
      slow.push_back("token " + std::to_string(prev.token) + " (client " +
                     std::to_string(prev.client) + ") to " +
                     std::to_string(h.token) + " (client " +
                     std::to_string(h.client) + "): " + ms_text(d));
    }
  }

  ASSERT_FALSE(handoffs.empty());
  std::sort(handoffs.begin(), handoffs.end());
  const auto over =
      handoffs.end() - std::upper_bound(handoffs.begin(), handoffs.end(),
                                        Clock::duration(kMaxHandoff));
  std::cout << "[ stats    ] " << holds.size() << " grants, " << handoffs.size()
            << " hand-offs (" << to_another_client << " to another client) in "
            << seconds << " s; hand-off p50 "
            << ms_text(percentile(handoffs, 50)) << ", p99 "
            << ms_text(percentile(handoffs, 99)) << ", max "
            << ms_text(handoffs.back()) << std::endl;
  EXPECT_EQ(over, 0) << over << " hand-offs took over " << ms_text(kMaxHandoff)
                     << ":" << stress::join(slow);
}

}  // namespace
