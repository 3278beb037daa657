// Stress tests of shared leases, semaphores and multi-leases against a live
// server (PGHOST/PGPORT/PGDATABASE), each for about 20 s.
//
// Every grant that ends with a release is written to an audit table by the
// release's own statement, with the grant's token and the interval it was
// held on the server's clock: from the grant's acquired_at to a
// clock_timestamp() read after the release's write and before its commit.
// A grant that must exclude another can only be decided after the other's
// release has committed, so on a correct run the intervals of conflicting
// grants never overlap, and the checks below are exact over them:
//   - readers and writers: no writer's interval overlaps any other grant's
//     of the name, successive writers' tokens increase, readers did hold it
//     together, and each writer was granted within 2 s of asking while
//     readers kept cycling;
//   - a semaphore of 3: at no instant more than 3 grants (holders killed
//     with SIGKILL count until their grant expires), and the permits of
//     killed holders are granted again after their expiry;
//   - acquire_all of 3 of 10 names: every call got all its names, none
//     timed out or deadlocked, and per name no two grants overlap and
//     tokens increase.
// The audit is read back as a history (test/history/history.h), each grant
// marked shared or a permit of 3, and judged by the history checker, the
// one home of "holds never overlap on the server's clock, tokens grow":
// readers may hold together, a writer with no one, a semaphore's permit
// with at most two others. What is left here in SQL counts what the runs
// reached (readers together, the semaphore full, permits freed).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "audit_history.h"
#include "checker.h"
#include "forked_workers.h"
#include "history.h"
#include <dlock/pq.h>
#include "stress_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kRunFor = milliseconds(20'000);
constexpr int kPermits = 3;  // of the semaphore

// A fresh schema with the audit table; the extension is created if missing.
void prepare_database() {
  dlock::pq::Connection c;
  c.exec("SET client_min_messages = warning");
  c.exec("CREATE EXTENSION IF NOT EXISTS dlock");
  c.exec("DROP SCHEMA IF EXISTS shapes_stress CASCADE");
  c.exec("CREATE SCHEMA shapes_stress");
  // No key on token: a duplicate must show in the checks, not as an error.
  // invoked_us and completed_us: when the client sent the grant's call and
  // got its answer (its clock, microseconds since the epoch).
  c.exec(
      "CREATE TABLE shapes_stress.audit ("
      "  name text NOT NULL, token bigint NOT NULL, owner text NOT NULL,"
      "  kind text NOT NULL, acquired_at timestamptz NOT NULL,"
      "  released_at timestamptz NOT NULL, expires_at timestamptz NOT NULL,"
      "  invoked_us bigint NOT NULL, completed_us bigint NOT NULL)");
}

// Releases (name, token) and, only if that released it, writes its audit
// row, in one statement: the row's released_at is read after the release.
constexpr char kReleaseAndAudit[] =
    "INSERT INTO shapes_stress.audit"
    " SELECT $1, $2::bigint, $3, $4, $5::timestamptz, clock_timestamp(),"
    "        $6::timestamptz, $7::bigint, $8::bigint"
    "  WHERE dlock.release($1, $2::bigint)";

std::int64_t scalar(dlock::pq::Connection& c, const std::string& sql) {
  return c.exec(sql).int64(0, 0);
}

// The audit as a history: a reader's grant is shared, a permit one of
// kPermits, and a killed holder's grant runs to its expiry.
std::vector<dlock::history::Op> audit_history(dlock::pq::Connection& c) {
  return stress::audit_history(c, "shapes_stress.audit", "kind", kPermits);
}

// ------------------------------------------------------- readers, writers

struct RwStats {
  std::int64_t grants = 0;
  std::int64_t failed_releases = 0;
  std::int64_t timeouts = 0;
  double longest_wait_s = 0;  // writers: from asking to the grant
  stress::ErrorLog errors;
};

void run_rw_client(bool writer, int index, stress::StartLine& start,
                   Clock::time_point until, RwStats& stats) {
  const std::string owner =
      (writer ? "writer-" : "reader-") + std::to_string(index);
  std::mt19937 rng(static_cast<unsigned>(index * 7919 + (writer ? 1 : 0)));
  std::uniform_int_distribution<int> hold_ms(5, 30);
  std::uniform_int_distribution<int> rest_ms(writer ? 50 : 0, writer ? 200 : 5);
  std::optional<dlock::pq::Connection> conn =
      stress::connect_at_start(start, "60s", stats.errors);
  if (!conn) return;
  dlock::pq::Connection& c = *conn;
  while (Clock::now() < until) {
    try {
      auto asked = Clock::now();
      const std::int64_t invoked = dlock::history::now_us();
      dlock::pq::Result r = c.try_exec(
          "SELECT token, acquired_at, expires_at FROM dlock.acquire('rw',"
          " '10 s', '10 s', $1, shared => $2::boolean)",
          owner, writer ? "false" : "true");
      const std::int64_t completed = dlock::history::now_us();
      if (!r.ok()) {
        if (r.sqlstate() != "55P03") r.raise();
        ++stats.timeouts;
        continue;
      }
      double waited =
          std::chrono::duration<double>(Clock::now() - asked).count();
      if (writer) stats.longest_wait_s = std::max(stats.longest_wait_s, waited);
      ++stats.grants;
      std::this_thread::sleep_for(milliseconds(hold_ms(rng)));
      if (c.exec(kReleaseAndAudit, "rw", r.value(0, 0), owner,
                 writer ? "write" : "read", r.value(0, 1), r.value(0, 2),
                 invoked, completed)
              .affected() != 1) {
        ++stats.failed_releases;
      }
      std::this_thread::sleep_for(milliseconds(rest_ms(rng)));
    } catch (const std::exception& e) {
      stats.errors.add(owner + ": " + e.what());
      if (!c.ok()) return;
    }
  }
}

TEST(LeaseShapesStress, ReadersAndWritersNeverOverlapAndWritersAreServed) {
  constexpr int kReaders = 12, kWriters = 3;
  prepare_database();
  std::vector<RwStats> stats(kReaders + kWriters);
  stress::StartLine start(kReaders + kWriters);
  auto until = Clock::now() + kRunFor;
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kReaders + kWriters; ++i) {
      threads.emplace_back(run_rw_client, i >= kReaders, i, std::ref(start),
                           until, std::ref(stats[i]));
    }
    for (std::thread& t : threads) t.join();
  }
  stress::ErrorLog errors;
  std::int64_t reads = 0, writes = 0, failed = 0, timeouts = 0;
  double longest = 0;
  for (int i = 0; i < kReaders + kWriters; ++i) {
    errors.add_all(stats[i].errors);
    (i < kReaders ? reads : writes) += stats[i].grants;
    failed += stats[i].failed_releases;
    timeouts += stats[i].timeouts;
    longest = std::max(longest, stats[i].longest_wait_s);
  }
  dlock::pq::Connection c;
  std::int64_t shared_pairs = scalar(
      c,
      "SELECT count(*) FROM shapes_stress.audit AS a"
      "  JOIN shapes_stress.audit AS b ON a.kind = 'read' AND b.kind = 'read'"
      "   AND b.token > a.token AND b.acquired_at < a.released_at"
      "   AND a.acquired_at < b.released_at");
  std::cout << "[readers/writers] " << reads << " reads, " << writes
            << " writes in " << kRunFor.count() / 1000 << " s; " << shared_pairs
            << " overlapping reader pairs; longest writer wait " << longest
            << " s\n";
  EXPECT_EQ(errors.count, 0) << stress::join(errors.first);
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(timeouts, 0);
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM shapes_stress.audit"),
            reads + writes);
  const dlock::history::Verdict verdict = dlock::history::check(
      audit_history(c), {/*fault_free=*/true, /*cycles=*/false});
  EXPECT_EQ(verdict.figures.violations, 0) << dlock::history::report(verdict);
  EXPECT_EQ(verdict.figures.grants, reads + writes);
  EXPECT_GT(shared_pairs, 0) << "readers never held the lease together";
  EXPECT_GE(writes, 3 * 20) << "writers were starved";
  EXPECT_LT(longest, 2.0) << "a writer waited 2 s or more";
}

// ------------------------------------------------------------- semaphore

constexpr int kSemaphoreClients = 16;
constexpr char kPermitTtl[] = "2 s";

// What each worker process shares with the harness: the grant it holds
// (token 0: none), with its instants as server-clock text for the audit
// and when the call was sent and answered (the client's clock).
struct PermitSlot {
  std::atomic<std::int64_t> token{0};
  char acquired_at[64];
  char expires_at[64];
  std::atomic<std::int64_t> invoked_us{0};
  std::atomic<std::int64_t> completed_us{0};
  std::atomic<std::int64_t> grants{0};
  std::atomic<std::int64_t> failed_releases{0};
};
struct PermitShared {
  PermitSlot slots[kSemaphoreClients];
};

void run_permit_worker(int index, PermitShared& shared) {
  PermitSlot& slot = shared.slots[index];
  const std::string owner = "permit-" + std::to_string(index);
  dlock::pq::Connection c("application_name='" + owner + "'");
  c.exec("SET statement_timeout = '60s'");
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> hold_ms(10, 50);
  while (!forked::stop_requested()) {
    const std::int64_t invoked = dlock::history::now_us();
    dlock::pq::Result r = c.try_exec(
        "SELECT token, acquired_at, expires_at FROM dlock.acquire('pool',"
        " $1::interval, '10 s', $2, permits => 3)",
        kPermitTtl, owner);
    if (!r.ok()) {
      if (r.sqlstate() == "55P03") continue;
      r.raise();
    }
    const std::int64_t completed = dlock::history::now_us();
    slot.invoked_us = invoked;
    slot.completed_us = completed;
    std::snprintf(slot.acquired_at, sizeof slot.acquired_at, "%s",
                  r.value(0, 1).c_str());
    std::snprintf(slot.expires_at, sizeof slot.expires_at, "%s",
                  r.value(0, 2).c_str());
    slot.token = r.int64(0, 0);
    ++slot.grants;
    std::this_thread::sleep_for(milliseconds(hold_ms(rng)));
    std::string token = r.value(0, 0);
    if (c.exec(kReleaseAndAudit, "pool", token, owner, "permit", r.value(0, 1),
               r.value(0, 2), invoked, completed)
            .affected() != 1) {
      ++slot.failed_releases;
    }
    slot.token = 0;
  }
}

TEST(LeaseShapesStress, ASemaphoreNeverHasMoreHoldersThanPermits) {
  prepare_database();
  forked::SharedMemory<PermitShared> shared;
  forked::Workers workers([](int i) { return "permit-" + std::to_string(i); });
  workers.start(
      kSemaphoreClients, [&](int i) { run_permit_worker(i, *shared); },
      SIGKILL);
  dlock::pq::Connection c;
  auto began = Clock::now();
  int killed = 0;
  // Twice, a third and two thirds in: every worker holding a permit is
  // killed (frozen first, so that it cannot release meanwhile). Its grant
  // goes to the audit as held until its expiry, unless its release had
  // already committed.
  for (int round = 1; round <= 2; ++round) {
    std::this_thread::sleep_until(began + round * kRunFor / 3);
    std::vector<int> holding;
    for (int i = 0; i < kSemaphoreClients; ++i) {
      if (!workers[i].running || shared->slots[i].token == 0) continue;
      if (!workers.pause(i)) continue;
      if (shared->slots[i].token == 0) {
        workers.resume(i);
        continue;
      }
      holding.push_back(i);
    }
    for (int i : holding) {
      const PermitSlot& slot = shared->slots[i];
      workers.kill(i);
      c.exec(
          "INSERT INTO shapes_stress.audit"
          " SELECT 'pool', $1::bigint, $2, 'killed', $3::timestamptz,"
          "        $4::timestamptz, $4::timestamptz, $5::bigint, $6::bigint"
          "  WHERE NOT EXISTS (SELECT FROM shapes_stress.audit"
          "                     WHERE token = $1::bigint)",
          slot.token.load(), "permit-" + std::to_string(i),
          std::string(slot.acquired_at), std::string(slot.expires_at),
          slot.invoked_us.load(), slot.completed_us.load());
      ++killed;
    }
  }
  std::this_thread::sleep_until(began + kRunFor);
  bool stopped = workers.stop_all(milliseconds(15'000));
  std::int64_t grants = 0, failed = 0;
  std::vector<std::string> errors;
  for (int i = 0; i < kSemaphoreClients; ++i) {
    grants += shared->slots[i].grants;
    failed += shared->slots[i].failed_releases;
    if (*workers.error(i)) errors.push_back(workers.error(i));
  }
  // The most grants held at one instant: +1 at each grant, -1 at each
  // end, ends first at equal instants (a grant may start as another ends).
  // A grant ends at its release or its expiry, whichever came first: a
  // release's clock is read after it ran, and a holder slowed down past
  // its expiry reads it late. (The history checker judges the bound;
  // this says the semaphore was full.)
  std::int64_t most =
      scalar(c,
             "SELECT max(held) FROM (SELECT sum(delta) OVER (ORDER BY at, delta"
             "  ROWS UNBOUNDED PRECEDING) AS held FROM ("
             "    SELECT acquired_at AS at, 1 AS delta FROM shapes_stress.audit"
             "    UNION ALL SELECT least(released_at, expires_at), -1"
             "                FROM shapes_stress.audit) AS e)"
             " AS s");
  // Killed grants whose permit nobody was granted after their expiry.
  std::int64_t never_freed = scalar(
      c,
      "SELECT count(*) FROM shapes_stress.audit AS k WHERE k.kind = 'killed'"
      "   AND NOT EXISTS (SELECT FROM shapes_stress.audit AS g"
      "                    WHERE g.kind = 'permit'"
      "                      AND g.acquired_at >= k.released_at)");
  std::int64_t killed_held = scalar(
      c,
      "SELECT count(*) FROM dlock.leases WHERE name = 'pool' AND state = "
      "'held' AND token IN (SELECT token FROM shapes_stress.audit"
      "                      WHERE kind = 'killed')");
  std::cout << "[semaphore] " << grants << " grants by " << kSemaphoreClients
            << " clients, " << killed
            << " holders killed; most at once: " << most << "\n";
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(errors.empty()) << stress::join(errors);
  EXPECT_EQ(failed, 0);
  EXPECT_GE(killed, 2);
  EXPECT_EQ(most, kPermits) << "more holders than permits, or never full";
  EXPECT_EQ(never_freed, 0);
  EXPECT_EQ(killed_held, 0);
  // Holders were killed: not a fault-free run.
  const dlock::history::Verdict verdict =
      dlock::history::check(audit_history(c));
  EXPECT_EQ(verdict.figures.violations, 0) << dlock::history::report(verdict);
}

// ---------------------------------------------------------- multi-leases

struct MultiStats {
  std::int64_t sets = 0;
  std::int64_t partial = 0;  // a call that returned other names than asked
  std::int64_t timeouts = 0;
  std::int64_t failed_releases = 0;
  stress::ErrorLog errors;
};

void run_multi_client(int index, stress::StartLine& start,
                      Clock::time_point until, MultiStats& stats) {
  const std::string owner = "multi-" + std::to_string(index);
  std::mt19937 rng(static_cast<unsigned>(index * 104729 + 17));
  std::uniform_int_distribution<int> hold_ms(2, 10);
  std::optional<dlock::pq::Connection> conn =
      stress::connect_at_start(start, "60s", stats.errors);
  if (!conn) return;
  dlock::pq::Connection& c = *conn;
  std::vector<int> all(10);
  std::iota(all.begin(), all.end(), 0);
  while (Clock::now() < until) {
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<std::string> names;
    for (int i = 0; i < 3; ++i) names.push_back("m" + std::to_string(all[i]));
    std::string array = "{" + names[0] + "," + names[1] + "," + names[2] + "}";
    try {
      const std::int64_t invoked = dlock::history::now_us();
      dlock::pq::Result r = c.try_exec(
          "SELECT array_agg(name ORDER BY name), array_agg(token ORDER BY"
          " name), array_agg(acquired_at ORDER BY name),"
          " array_agg(expires_at ORDER BY name)"
          "  FROM dlock.acquire_all($1::text[], '10 s', '10 s', $2)",
          array, owner);
      const std::int64_t completed = dlock::history::now_us();
      if (!r.ok()) {
        if (r.sqlstate() != "55P03") r.raise();
        ++stats.timeouts;
        continue;
      }
      std::sort(names.begin(), names.end());
      if (r.value(0, 0) !=
          "{" + names[0] + "," + names[1] + "," + names[2] + "}") {
        ++stats.partial;
        continue;
      }
      ++stats.sets;
      std::this_thread::sleep_for(milliseconds(hold_ms(rng)));
      std::int64_t released =
          c.exec(
               "INSERT INTO shapes_stress.audit"
               " SELECT n, t, $4, 'multi', a, clock_timestamp(), e,"
               "        $6::bigint, $7::bigint"
               "   FROM unnest($1::text[], $2::bigint[], $3::timestamptz[],"
               "               $5::timestamptz[]) AS u(n, t, a, e)"
               "  WHERE dlock.release(n, t)",
               r.value(0, 0), r.value(0, 1), r.value(0, 2), owner,
               r.value(0, 3), invoked, completed)
              .affected();
      stats.failed_releases += 3 - released;
    } catch (const std::exception& e) {
      stats.errors.add(owner + ": " + e.what());
      if (!c.ok()) return;
    }
  }
}

TEST(LeaseShapesStress, AcquireAllTakesWholeSetsWithoutDeadlock) {
  constexpr int kClients = 8;
  prepare_database();
  std::vector<MultiStats> stats(kClients);
  stress::StartLine start(kClients);
  auto until = Clock::now() + kRunFor;
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
      threads.emplace_back(run_multi_client, i, std::ref(start), until,
                           std::ref(stats[i]));
    }
    for (std::thread& t : threads) t.join();
  }
  MultiStats total;
  for (const MultiStats& s : stats) {
    total.sets += s.sets;
    total.partial += s.partial;
    total.timeouts += s.timeouts;
    total.failed_releases += s.failed_releases;
    total.errors.add_all(s.errors);
  }
  dlock::pq::Connection c;
  std::cout << "[multi-leases] " << total.sets << " sets of 3 of 10 names by "
            << kClients << " clients in " << kRunFor.count() / 1000 << " s\n";
  EXPECT_EQ(total.errors.count, 0) << stress::join(total.errors.first);
  EXPECT_EQ(total.partial, 0);
  EXPECT_EQ(total.timeouts, 0) << "an acquire_all waited 10 s";
  EXPECT_EQ(total.failed_releases, 0);
  EXPECT_GE(total.sets, 100);
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM shapes_stress.audit"),
            3 * total.sets);
  const dlock::history::Verdict verdict = dlock::history::check(
      audit_history(c), {/*fault_free=*/true, /*cycles=*/false});
  EXPECT_EQ(verdict.figures.violations, 0) << dlock::history::report(verdict);
  EXPECT_EQ(verdict.figures.grants, 3 * total.sets);
}

}  // namespace
