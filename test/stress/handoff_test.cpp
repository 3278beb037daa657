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
// The line of holds is checked on the server's clock, exactly: a hold
// starts at the grant's acquired_at and ends at the clock_timestamp() its
// release statement read after dlock.release returned (before it commits,
// so before any other session can see the lease free). In token order each
// grant must be made strictly after the one before it and no earlier than
// the end of the hold before it, and every release must come before its
// own expiry.
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
#include "stress_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kLease[] = "handoff-stress";
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

// One grant and its release.
struct Hold {
  int client = 0;
  std::int64_t token = 0;
  std::int64_t acquired_us = 0;  // server clock
  std::int64_t expires_us = 0;
  std::int64_t released_us = 0;  // server clock, after the release
  bool released = false;         // dlock.release returned true
  Clock::time_point granted;     // acquire returned
  std::optional<Clock::time_point> release_returned;
};

// What one client saw. Written only by its own thread.
struct ClientLog {
  std::vector<Hold> holds;
  stress::ErrorLog errors;
};

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
    try {
      dlock::pq::Result g = c.exec(kAcquire, kLease);
      Hold h;
      h.granted = Clock::now();
      h.client = index;
      h.token = g.int64(0, 0);  // throws on NULL
      h.acquired_us = g.int64(0, 1);
      h.expires_us = g.int64(0, 2);
      log.holds.push_back(h);

      dlock::pq::Result r = c.exec(kRelease, kLease, h.token);
      Hold& held = log.holds.back();
      held.release_returned = Clock::now();
      held.released = r.boolean(0, 0);
      held.released_us = r.int64(0, 1);
    } catch (const std::exception& e) {
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
  for (const ClientLog& l : logs) {
    errors.add_all(l.errors);
    holds.insert(holds.end(), l.holds.begin(), l.holds.end());
  }
  EXPECT_EQ(errors.count, 0) << "errors:" << stress::join(errors.first);
  EXPECT_EQ(holds.size(), std::size_t{kClients} * kCyclesPerClient)
      << "not every cycle was granted within " << ms(kRunBudget) / 1000 << " s";
  ASSERT_FALSE(holds.empty());

  std::sort(holds.begin(), holds.end(),
            [](const Hold& a, const Hold& b) { return a.token < b.token; });
  std::int64_t failed_releases = 0;
  stress::ErrorLog line_errors;
  auto line_error = [&](const Hold& h, const std::string& what) {
    line_errors.add("token " + std::to_string(h.token) + ": " + what);
  };
  std::vector<Clock::duration> handoffs;
  std::int64_t to_another_client = 0;
  std::vector<std::string> slow;
  for (std::size_t i = 0; i < holds.size(); ++i) {
    const Hold& h = holds[i];
    if (h.release_returned && !h.released) ++failed_releases;
    if (h.released && h.released_us >= h.expires_us) {
      line_error(h, "released at or after its expiry");
    }
    if (i == 0) continue;
    const Hold& prev = holds[i - 1];
    if (h.token == prev.token) line_error(h, "granted twice");
    if (h.acquired_us <= prev.acquired_us) {
      line_error(h, "granted no later than the grant of token " +
                        std::to_string(prev.token));
    }
    // A release that failed leaves no known end (its error fails the
    // test); one that returned false left the hold to end at its expiry.
    if (!prev.release_returned) continue;
    const std::int64_t prev_end =
        prev.released ? prev.released_us : prev.expires_us;
    if (h.acquired_us < prev_end) {
      line_error(h, "granted " + std::to_string(prev_end - h.acquired_us) +
                        " us before the hold of token " +
                        std::to_string(prev.token) + " ended");
    }
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
  EXPECT_EQ(failed_releases, 0) << "dlock.release returned false";
  EXPECT_EQ(line_errors.count, 0)
      << "the holds do not form one line in token order:"
      << stress::join(line_errors.first);

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
