// Stress tests for dlock against a live server (PGHOST/PGPORT/PGDATABASE).
//
// Many clients, each on its own connection, race for a few leases. Every
// granted hold does a read-modify-write of a per-name counter (which loses
// updates if two holds ever overlap), then releases the lease and writes an
// audit row in the same transaction. Afterwards the audit table must show
// exactly as many holds as the clients were granted and, read back as a
// history (test/history/history.h) and judged by the history checker, per
// name a single line of holds: no two overlapping on the server's clock,
// tokens growing in the order they were granted.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <dlock/pq.h>
#include "audit_history.h"
#include "checker.h"
#include "history.h"
#include "stress_support.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kTtl[] = "5 s";

// How a client asks for the lease.
enum class Mode { try_acquire, acquire };

struct Config {
  Mode mode;
  int clients;
  int cycles;
  std::vector<std::string> names;
  const char* acquire_timeout;  // Mode::acquire only
};

// What one client saw. Written only by its own thread.
struct ClientStats {
  std::map<std::string, std::int64_t> grants;  // per lease name
  std::int64_t busy = 0;                       // try_acquire returned NULL
  std::int64_t timeouts = 0;                   // acquire raised 55P03
  std::int64_t failed_releases = 0;            // release returned false
  std::int64_t odd_leases = 0;  // lease with the wrong owner or ttl
  stress::ErrorLog errors;      // any other error
};

// A fresh schema of the test's own, so the test can be rerun against the
// same database; the extension is created if missing.
void prepare_database(const std::vector<std::string>& names) {
  dlock::pq::Connection c;
  c.exec("SET client_min_messages = warning");
  c.exec("CREATE EXTENSION IF NOT EXISTS dlock");
  c.exec("DROP SCHEMA IF EXISTS dlock_stress CASCADE");
  c.exec("CREATE SCHEMA dlock_stress");
  // No key on token: a duplicate token must show up in the checks below,
  // not as an insert error. invoked_us and completed_us: when the client
  // sent the grant's call and got its answer (its clock, microseconds
  // since the epoch).
  c.exec(
      "CREATE TABLE dlock_stress.audit ("
      "  name text NOT NULL, token bigint NOT NULL, owner text NOT NULL,"
      "  acquired_at timestamptz NOT NULL, released_at timestamptz NOT NULL,"
      "  expires_at timestamptz NOT NULL, invoked_us bigint NOT NULL,"
      "  completed_us bigint NOT NULL)");
  c.exec(
      "CREATE TABLE dlock_stress.counters ("
      "  name text PRIMARY KEY, n bigint NOT NULL)");
  for (const std::string& name : names) {
    c.exec("INSERT INTO dlock_stress.counters VALUES ($1, 0)", name);
  }
}

// A grant as the audit keeps it: the server's text for its columns, so it
// goes back into the audit row unchanged, and the client's instants.
struct Taken {
  std::string token;
  std::string acquired_at;
  std::string expires_at;
  std::int64_t invoked_us = 0;
  std::int64_t completed_us = 0;
};

// Asks for the lease once. Returns false if it was not granted (busy or
// timed out, counted in stats); otherwise fills `taken`.
bool take_lease(dlock::pq::Connection& c, const Config& cfg,
                const std::string& name, const std::string& owner,
                ClientStats& stats, Taken& taken) {
  // Calling the function in FROM runs it once; a busy lease is one row of
  // NULLs. "sane" checks the lease is ours and exactly ttl long.
  const std::string columns =
      "SELECT l.token, l.acquired_at,"
      "       l.owner = $2 AND l.expires_at - l.acquired_at = $3::interval,"
      "       l.expires_at"
      "  FROM ";
  taken.invoked_us = dlock::history::now_us();
  dlock::pq::Result r =
      cfg.mode == Mode::try_acquire
          ? c.exec(columns + "dlock.try_acquire($1, $3::interval, $2) AS l",
                   name, owner, kTtl)
          : c.try_exec(columns +
                           "dlock.acquire($1, $3::interval, $4::interval, $2)"
                           " AS l",
                       name, owner, kTtl, cfg.acquire_timeout);
  if (!r.ok()) {
    if (r.sqlstate() == "55P03") {
      ++stats.timeouts;
      return false;
    }
    r.raise();
  }
  if (r.isnull(0, 0)) {
    if (cfg.mode == Mode::acquire) {
      throw dlock::pq::Error("", "dlock.acquire returned NULL");
    }
    ++stats.busy;
    return false;
  }
  taken.completed_us = dlock::history::now_us();
  if (!r.boolean(0, 2)) ++stats.odd_leases;
  taken.token = r.value(0, 0);
  taken.acquired_at = r.value(0, 1);
  taken.expires_at = r.value(0, 3);
  return true;
}

void run_client(const Config& cfg, int index, stress::StartLine& start,
                ClientStats& stats) {
  const std::string owner = "stress-client-" + std::to_string(index);
  std::mt19937 rng(
      static_cast<unsigned>(index) * 7919u +
      static_cast<unsigned>(Clock::now().time_since_epoch().count()));
  std::uniform_int_distribution<std::size_t> pick(0, cfg.names.size() - 1);
  std::uniform_int_distribution<int> pause_us(0, 1000);

  std::optional<dlock::pq::Connection> conn =
      stress::connect_at_start(start, "60s", stats.errors);
  if (!conn) return;
  dlock::pq::Connection& c = *conn;

  for (int cycle = 0; cycle < cfg.cycles; ++cycle) {
    const std::string& name = cfg.names[pick(rng)];
    try {
      Taken taken;
      if (!take_lease(c, cfg, name, owner, stats, taken)) {
        std::this_thread::sleep_for(std::chrono::microseconds(pause_us(rng)));
        continue;
      }
      ++stats.grants[name];

      // The work: a read-modify-write that two overlapping holds would
      // corrupt (each statement commits on its own, so only the lease
      // keeps them apart).
      std::int64_t n =
          c.exec("SELECT n FROM dlock_stress.counters WHERE name = $1", name)
              .int64(0, 0);
      c.exec("UPDATE dlock_stress.counters SET n = $2 WHERE name = $1", name,
             n + 1);

      c.exec("BEGIN");
      bool released =
          c.exec("SELECT dlock.release($1, $2::bigint)", name, taken.token)
              .boolean(0, 0);
      if (!released) ++stats.failed_releases;
      c.exec(
          "INSERT INTO dlock_stress.audit"
          " VALUES ($1, $2::bigint, $3, $4::timestamptz, clock_timestamp(),"
          "         $5::timestamptz, $6::bigint, $7::bigint)",
          name, taken.token, owner, taken.acquired_at, taken.expires_at,
          taken.invoked_us, taken.completed_us);
      c.exec("COMMIT");
    } catch (const std::exception& e) {
      stats.errors.add(owner + " cycle " + std::to_string(cycle) + ": " +
                       e.what());
      // Leave no transaction open; a dead connection ends the client.
      if (!c.ok()) return;
      c.try_exec("ROLLBACK");
    }
  }
}

// Totals over all clients.
struct Totals {
  std::map<std::string, std::int64_t> grants;
  std::int64_t all_grants = 0;
  std::int64_t busy = 0;
  std::int64_t timeouts = 0;
  std::int64_t failed_releases = 0;
  std::int64_t odd_leases = 0;
  stress::ErrorLog errors;
  double seconds = 0;
};

Totals run_clients(const Config& cfg) {
  std::vector<ClientStats> stats(cfg.clients);
  stress::StartLine start(cfg.clients);
  auto began = Clock::now();
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < cfg.clients; ++i) {
      threads.emplace_back(run_client, std::cref(cfg), i, std::ref(start),
                           std::ref(stats[i]));
    }
    for (std::thread& t : threads) t.join();
  }
  Totals t;
  t.seconds = std::chrono::duration<double>(Clock::now() - began).count();
  for (const ClientStats& s : stats) {
    for (const auto& [name, n] : s.grants) {
      t.grants[name] += n;
      t.all_grants += n;
    }
    t.busy += s.busy;
    t.timeouts += s.timeouts;
    t.failed_releases += s.failed_releases;
    t.odd_leases += s.odd_leases;
    t.errors.add_all(s.errors);
  }
  return t;
}

// The audit as a history: every grant exclusive, each with its release.
std::vector<dlock::history::Op> audit_history(dlock::pq::Connection& c) {
  return stress::audit_history(c, "dlock_stress.audit");
}

// Checks the audit trail, counters and dlock.leases against what the
// clients counted.
void check_invariants(const Config& cfg, const Totals& t) {
  dlock::pq::Connection c;

  EXPECT_EQ(t.errors.count, 0)
      << "unexpected errors:" << stress::join(t.errors.first);
  EXPECT_EQ(t.failed_releases, 0) << "dlock.release returned false";
  EXPECT_EQ(t.odd_leases, 0) << "a lease with the wrong owner or ttl";

  dlock::pq::Result all =
      c.exec("SELECT count(*), count(DISTINCT token) FROM dlock_stress.audit");
  EXPECT_EQ(all.int64(0, 0), t.all_grants) << "audit rows vs grants counted";
  EXPECT_EQ(all.int64(0, 1), all.int64(0, 0))
      << "a token was handed out twice (tokens come from one sequence)";

  // The lines of holds: none overlapping, tokens growing.
  const dlock::history::Verdict verdict = dlock::history::check(
      audit_history(c), {/*fault_free=*/true, /*cycles=*/false});
  EXPECT_EQ(verdict.figures.violations, 0) << dlock::history::report(verdict);
  EXPECT_EQ(verdict.figures.grants, t.all_grants);

  for (const std::string& name : cfg.names) {
    SCOPED_TRACE("lease " + name);
    const std::int64_t grants = t.grants.count(name) ? t.grants.at(name) : 0;
    EXPECT_GT(grants, 0) << "the lease was never granted";

    dlock::pq::Result r = c.exec(
        "SELECT count(*),"
        "       count(*) FILTER (WHERE released_at < acquired_at),"
        "       coalesce(max(token), 0)"
        "  FROM dlock_stress.audit WHERE name = $1",
        name);
    EXPECT_EQ(r.int64(0, 0), grants) << "audit rows vs grants counted";
    EXPECT_EQ(r.int64(0, 1), 0) << "released before acquired";
    const std::int64_t last_token = r.int64(0, 2);

    EXPECT_EQ(
        c.exec("SELECT n FROM dlock_stress.counters WHERE name = $1", name)
            .int64(0, 0),
        grants)
        << "counter updates were lost: two holds overlapped";

    // The lease itself ends released, with the last token granted.
    dlock::pq::Result lease =
        c.exec("SELECT state, token FROM dlock.leases WHERE name = $1", name);
    ASSERT_EQ(lease.rows(), 1);
    EXPECT_EQ(lease.value(0, 0), "released");
    EXPECT_EQ(lease.int64(0, 1), last_token);
  }
}

void report(const char* title, const Totals& t) {
  std::cout << "[ stats    ] " << title << ": " << t.all_grants << " grants, "
            << t.busy << " busy, " << t.timeouts << " timeouts in " << t.seconds
            << " s; per lease:";
  for (const auto& [name, n] : t.grants) std::cout << ' ' << name << '=' << n;
  std::cout << std::endl;
}

// 16 clients x 1000 try_acquire cycles on 4 names: busy answers are normal,
// grants must form one non-overlapping line of holds per name.
TEST(Stress, TryAcquireManyClientsFewNames) {
  const Config cfg{Mode::try_acquire,
                   16,
                   1000,
                   {"stress-a", "stress-b", "stress-c", "stress-d"},
                   nullptr};
  prepare_database(cfg.names);
  Totals t = run_clients(cfg);
  report("try_acquire", t);

  EXPECT_GT(t.busy, 0) << "no contention: the test did not race";
  EXPECT_EQ(t.all_grants + t.busy + t.errors.count,
            std::int64_t{cfg.clients} * cfg.cycles)
      << "every cycle ends granted, busy or in error";
  check_invariants(cfg, t);
}

// 8 clients x 50 cycles of dlock.acquire on one name with a generous
// timeout: every cycle must be granted, none may time out.
TEST(Stress, AcquireWaitsOneName) {
  const Config cfg{Mode::acquire, 8, 50, {"stress-acquire"}, "30 s"};
  prepare_database(cfg.names);
  Totals t = run_clients(cfg);
  report("acquire", t);

  EXPECT_EQ(t.timeouts, 0) << "dlock.acquire timed out";
  EXPECT_EQ(t.busy, 0);
  EXPECT_EQ(t.all_grants, std::int64_t{cfg.clients} * cfg.cycles);
  check_invariants(cfg, t);
}

}  // namespace
