// Fencing stress test against a live server (PGHOST/PGPORT/PGDATABASE).
//
// Six worker processes share one counter row. Each loops: take the lease
// with dlock.acquire (ttl 1 s), read the counter, work a random 20-250 ms,
// write counter = read + 1 with dlock.fenced_update and its token, release.
// Meanwhile the harness (this process) repeatedly picks a random worker
// that is in its work phase, holding the lease, and freezes it with SIGSTOP
// for three times the ttl. While it is frozen its lease expires and newer
// holders write the row; when it is resumed with SIGCONT it goes on to
// write with its old token, and that write must be rejected with LD001.
//
// Every acknowledged write (one row updated) also inserts an audit row in
// the same statement, so the audit table holds exactly the writes that
// committed; workers also report every write's outcome through shared
// memory. The checks:
//   - ordered by the counter value they wrote, the acknowledged writes are
//     1, 2, ..., N with tokens strictly increasing: no two holds ever
//     overlapped, and no write with a token below the row's fence got in
//     (it would have broken the order or repeated a value);
//   - the counter ends at N, the number of acknowledged writes, with the
//     fence of the last one: nothing lost, nothing counted twice;
//   - every pause hit a worker holding the lease, a newer holder wrote the
//     row while it was frozen, and its late write was rejected with LD001;
//   - every rejected write came from a worker that had lost its lease, and
//     no write matched no row.
//
// Why the pauses are placed as they are: fencing rejects a write whose
// token is below the row's fence, i.e. once a newer holder has written. A
// stale holder that wakes after a newer holder has taken the lease and read
// the counter, but before that holder's write, still gets its write in (its
// token is not below the fence yet), and the newer holder's write then
// overwrites it with a value computed from the older read: a lost update
// that no fencing check can see. So the harness freezes one worker at a
// time, only while it is working with the lease, for three ttls (the next
// holder takes over after at most one ttl and writes within a few hundred
// ms), and checks that the row's fence has moved past the frozen token
// before resuming it.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "forked_workers.h"
#include <dlock/pq.h>
#include "stress_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kLease[] = "fencing-stress";
constexpr char kTtl[] = "1 s";
constexpr auto kTtlDuration = milliseconds(1'000);
// One acquire() waits this long; a timeout (55P03) just means "ask again".
constexpr char kAcquireTimeout[] = "5 s";
constexpr int kWorkers = 6;
constexpr int kWorkMinMs = 20;
constexpr int kWorkMaxMs = 250;
// A short rest after each release, so that the worker that just released
// does not simply take the lease straight back while the others back off.
constexpr int kRestMinMs = 10;
constexpr int kRestMaxMs = 60;
// Workers run this long; then they finish their current hold and stop.
constexpr auto kRunFor = milliseconds(30'000);
// A frozen holder stays frozen for three times its ttl.
constexpr auto kPauseFor = 3 * kTtlDuration;
// A worker is frozen only with at least this much of its work left, so it
// is still working (holding the lease, its write not yet sent) when the
// signal lands; the harness checks that after the fact as well.
constexpr auto kMinWorkLeft = milliseconds(15);
// Pauses that must hit a holder; the schedule leaves room for about seven.
constexpr int kMinPauses = 5;
constexpr int kMaxWritesPerWorker = 4096;

// ------------------------------------------------------------------ shared
// Memory shared by the harness and the workers (lock-free atomics work
// across processes). Each worker writes only its own slot.

enum Phase : int {
  kIdle,
  kAcquiring,
  kReading,
  kWorking,
  kWriting,
  kReleasing
};

enum Outcome : int {
  kAcknowledged = 1,  // one row updated (and its audit row inserted)
  kStale = 2,         // rejected with LD001
  kNoRow = 3,         // fenced_update returned 0: matched no row
};

// One fenced write, as its worker saw it.
struct Write {
  std::int64_t token;
  std::int64_t value;  // the counter value it wrote or tried to (read + 1)
  int outcome;
  bool released;  // dlock.release(name, token) returned true afterwards
};

struct Slot {
  std::atomic<int> phase{kIdle};
  std::atomic<std::int64_t> token{0};         // the lease held, else 0
  std::atomic<std::int64_t> work_ends_ns{0};  // forked::now_ns()
  std::atomic<int> writes_done{0};  // writes[0, writes_done) are final
  Write writes[kMaxWritesPerWorker];
  std::atomic<std::int64_t> holds{0};
  std::atomic<std::int64_t> timeouts{0};  // acquire raised 55P03
};

struct Shared {
  Slot slots[kWorkers];
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free");

std::string worker_name(int index) {
  return "fencing-worker-" + std::to_string(index + 1);
}

// ------------------------------------------------------------------ worker

// The write: the fenced update of the counter and, only if it updated the
// row, the audit row, in one statement and so in one transaction.
constexpr char kFencedWrite[] =
    "WITH w AS ("
    "  SELECT dlock.fenced_update('fence_stress.counter', $1::bigint,"
    "                             jsonb_build_object('n', $2::bigint),"
    "                             '{\"id\": 1}') AS updated),"
    " a AS ("
    "  INSERT INTO fence_stress.writes (token, worker, value)"
    "  SELECT $1::bigint, $3::int, $2::bigint FROM w WHERE w.updated = 1"
    "  RETURNING 1)"
    " SELECT w.updated, (SELECT count(*) FROM a) FROM w";

void run_worker(int index, Shared& shared) {
  Slot& slot = shared.slots[index];
  const std::string owner = worker_name(index);
  // Opened after the fork: a libpq connection is never shared between
  // processes.
  dlock::pq::Connection c("application_name='" + owner + "'");
  c.exec("SET client_min_messages = warning");
  // A stuck server fails the test instead of hanging it.
  c.exec("SET statement_timeout = '30s'");
  std::mt19937 rng(static_cast<unsigned>(getpid()) * 2654435761u);
  std::uniform_int_distribution<int> work_ms(kWorkMinMs, kWorkMaxMs);
  std::uniform_int_distribution<int> rest_ms(kRestMinMs, kRestMaxMs);

  while (!forked::stop_requested()) {
    slot.phase = kAcquiring;
    dlock::pq::Result lease = c.try_exec(
        "SELECT token FROM dlock.acquire($1, $2::interval, $3::interval, $4)",
        kLease, kTtl, kAcquireTimeout, owner);
    if (!lease.ok()) {
      if (lease.sqlstate() == "55P03") {
        ++slot.timeouts;
        continue;
      }
      lease.raise();
    }
    const std::int64_t token = lease.int64(0, 0);  // throws on NULL
    ++slot.holds;
    slot.token = token;

    slot.phase = kReading;
    const std::int64_t read =
        c.exec("SELECT n FROM fence_stress.counter WHERE id = 1").int64(0, 0);

    const int work = work_ms(rng);
    slot.work_ends_ns =
        forked::now_ns() + std::chrono::nanoseconds(milliseconds(work)).count();
    slot.phase = kWorking;
    std::this_thread::sleep_for(milliseconds(work));

    slot.phase = kWriting;
    Write w{token, read + 1, 0, false};
    dlock::pq::Result r = c.try_exec(kFencedWrite, token, read + 1, index + 1);
    if (r.ok()) {
      const std::int64_t updated = r.int64(0, 0);
      const std::int64_t audited = r.int64(0, 1);
      if (updated == 1 && audited == 1) {
        w.outcome = kAcknowledged;
      } else if (updated == 0 && audited == 0) {
        w.outcome = kNoRow;
      } else {
        throw dlock::pq::Error("", "fenced_update updated " +
                                       std::to_string(updated) + " rows and " +
                                       std::to_string(audited) +
                                       " audit rows were written");
      }
    } else if (r.sqlstate() == "LD001") {
      w.outcome = kStale;
    } else {
      r.raise();
    }

    slot.phase = kReleasing;
    w.released = c.exec("SELECT dlock.release($1, $2::bigint)", kLease, token)
                     .boolean(0, 0);
    slot.token = 0;
    slot.phase = kIdle;

    const int n = slot.writes_done.load();
    if (n == kMaxWritesPerWorker) {
      throw dlock::pq::Error("", "more writes than the report has room for");
    }
    slot.writes[n] = w;
    slot.writes_done.store(n + 1);
    std::this_thread::sleep_for(milliseconds(rest_ms(rng)));
  }
}

// ------------------------------------------------------------------ harness

// One freeze of a holder by the harness.
struct Pause {
  int worker = 0;
  std::int64_t token = 0;            // the lease it held when frozen
  bool held_when_frozen = false;     // dlock.leases: held with that token
  std::int64_t fence_at_resume = 0;  // the row's fence just before SIGCONT
  std::int64_t lease_token_at_resume = 0;
};

// A fresh schema of the test's own, so the test can be rerun against the
// same database; the extension is created if missing.
void prepare_database() {
  dlock::pq::Connection c;
  c.exec("SET client_min_messages = warning");
  c.exec("CREATE EXTENSION IF NOT EXISTS dlock");
  c.exec("DROP SCHEMA IF EXISTS fence_stress CASCADE");
  c.exec("CREATE SCHEMA fence_stress");
  c.exec(
      "CREATE TABLE fence_stress.counter ("
      "  id int PRIMARY KEY, n bigint NOT NULL, fence_token bigint)");
  c.exec("INSERT INTO fence_stress.counter VALUES (1, 0, NULL)");
  // No keys: a repeated token or value must show up in the checks, not as
  // an insert error.
  c.exec(
      "CREATE TABLE fence_stress.writes ("
      "  token bigint NOT NULL, worker int NOT NULL, value bigint NOT NULL)");
}

// A random worker that is working while holding the lease with at least
// kMinWorkLeft of its work to go; -1 if there is none.
int pick_working_holder(const Shared& shared, const forked::Workers& workers,
                        std::mt19937& rng) {
  std::vector<int> candidates;
  for (int i = 0; i < kWorkers; ++i) {
    const Slot& s = shared.slots[i];
    if (workers[i].running && s.phase == kWorking &&
        s.work_ends_ns - forked::now_ns() >=
            std::chrono::nanoseconds(kMinWorkLeft).count()) {
      candidates.push_back(i);
    }
  }
  if (candidates.empty()) return -1;
  return candidates[std::uniform_int_distribution<std::size_t>(
      0, candidates.size() - 1)(rng)];
}

// Freezes one random worker that is working while holding the lease, for
// kPauseFor; nullopt if none could be caught in time.
std::optional<Pause> freeze_a_holder(const Shared& shared,
                                     forked::Workers& workers,
                                     dlock::pq::Connection& db,
                                     std::mt19937& rng) {
  std::optional<Pause> frozen;
  forked::poll_until(milliseconds(3'000), milliseconds(1), [&] {
    const int i = pick_working_holder(shared, workers, rng);
    if (i < 0) return false;
    const std::int64_t token = shared.slots[i].token;
    // If it ended instead, the checks report it.
    if (!workers.pause(i)) return true;
    // Frozen now, so its slot cannot change under us: did the signal land
    // while it was still working with that lease?
    const Slot& s = shared.slots[i];
    if (s.phase != kWorking || s.token != token) {
      workers.resume(i);
      return false;
    }
    frozen.emplace();
    frozen->worker = i;
    frozen->token = token;
    return true;
  });
  if (!frozen) return std::nullopt;
  Pause& p = *frozen;
  dlock::pq::Result lease = db.exec(
      "SELECT token, state = 'held' FROM dlock.leases WHERE name = $1", kLease);
  p.held_when_frozen =
      lease.rows() == 1 && lease.int64(0, 0) == p.token && lease.boolean(0, 1);

  std::this_thread::sleep_for(kPauseFor);

  dlock::pq::Result now = db.exec(
      "SELECT coalesce((SELECT fence_token FROM fence_stress.counter"
      "                  WHERE id = 1), 0),"
      "       coalesce((SELECT token FROM dlock.leases WHERE name = $1), 0)",
      kLease);
  p.fence_at_resume = now.int64(0, 0);
  p.lease_token_at_resume = now.int64(0, 1);
  workers.resume(p.worker);
  return p;
}

TEST(FencingStress, PausedHoldersAreFencedOff) {
  prepare_database();

  std::optional<forked::SharedMemory<Shared>> memory;
  ASSERT_NO_THROW(memory.emplace());
  Shared& shared = **memory;

  const auto began = Clock::now();
  std::vector<Pause> pauses;
  int missed_pauses = 0;
  bool all_stopped = false;
  {
    forked::Workers workers(worker_name);
    // Die with the harness at once, even while frozen.
    workers.start(
        kWorkers, [&](int index) { run_worker(index, shared); }, SIGKILL);
    // The harness's own connection, opened after the fork.
    dlock::pq::Connection db("application_name='fencing-harness'");
    std::mt19937 rng(static_cast<unsigned>(forked::now_ns()));
    std::uniform_int_distribution<int> gap_ms(200, 1'000);

    // One worker frozen at a time: while it is frozen the others go on and
    // take the lease over.
    const auto last_pause_by =
        began + kRunFor - kPauseFor - milliseconds(1'500);
    while (Clock::now() < last_pause_by) {
      std::this_thread::sleep_for(milliseconds(gap_ms(rng)));
      std::optional<Pause> p = freeze_a_holder(shared, workers, db, rng);
      if (p) {
        pauses.push_back(*p);
      } else {
        ++missed_pauses;
      }
    }
    std::this_thread::sleep_until(began + kRunFor);
    all_stopped = workers.stop_all(milliseconds(20'000));

    for (int i = 0; i < kWorkers; ++i) {
      EXPECT_TRUE(workers[i].exited_cleanly())
          << worker_name(i) << " ended abnormally: "
          << (workers.error(i)[0] ? workers.error(i) : "no message");
    }
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - began).count();
  EXPECT_TRUE(all_stopped) << "a worker did not stop when asked";

  // What the workers reported.
  std::map<std::int64_t, Write> acknowledged_by_value;
  std::vector<std::string> repeated_values;
  std::map<std::int64_t, Write> by_token;  // every write, by its token
  std::int64_t acknowledged = 0, stale = 0, no_row = 0, holds = 0, timeouts = 0,
               acknowledged_but_lost = 0;
  std::vector<std::string> bad_rejections;
  std::string holds_per_worker;
  for (int i = 0; i < kWorkers; ++i) {
    const Slot& s = shared.slots[i];
    holds += s.holds;
    holds_per_worker += (i ? "/" : "") + std::to_string(s.holds.load());
    timeouts += s.timeouts;
    for (int k = 0; k < s.writes_done; ++k) {
      const Write& w = s.writes[k];
      EXPECT_TRUE(by_token.emplace(w.token, w).second)
          << "token " << w.token << " was granted twice";
      switch (w.outcome) {
        case kAcknowledged:
          ++acknowledged;
          if (!w.released) ++acknowledged_but_lost;
          if (!acknowledged_by_value.emplace(w.value, w).second) {
            repeated_values.push_back(
                "value " + std::to_string(w.value) + " written by tokens " +
                std::to_string(acknowledged_by_value.at(w.value).token) +
                " and " + std::to_string(w.token));
          }
          break;
        case kStale:
          ++stale;
          // Rejected only after losing the lease: the release that
          // followed must have found it gone.
          if (w.released) {
            bad_rejections.push_back("token " + std::to_string(w.token) +
                                     " was rejected while its lease was "
                                     "still held");
          }
          break;
        default:
          ++no_row;
          break;
      }
    }
  }
  std::cout << "[ stats    ] " << holds << " holds (" << holds_per_worker
            << " per worker), " << acknowledged << " writes acknowledged ("
            << acknowledged_but_lost
            << " of them with the lease gone by the release), " << stale
            << " rejected with LD001, " << no_row << " matched no row, "
            << timeouts << " acquire timeouts; " << pauses.size()
            << " holders frozen for " << kPauseFor.count() << " ms ("
            << missed_pauses << " attempts missed); " << seconds << " s"
            << std::endl;

  // Pauses: each hit a holder, a newer holder wrote while it was frozen,
  // and its late write was rejected.
  EXPECT_GE(static_cast<int>(pauses.size()), kMinPauses)
      << "too few holders were frozen while holding the lease";
  for (const Pause& p : pauses) {
    SCOPED_TRACE(worker_name(p.worker) + " frozen holding token " +
                 std::to_string(p.token));
    EXPECT_TRUE(p.held_when_frozen) << "it did not hold the lease when frozen";
    EXPECT_GT(p.lease_token_at_resume, p.token)
        << "nobody took the lease over while it was frozen";
    EXPECT_GT(p.fence_at_resume, p.token)
        << "no newer holder wrote the row while it was frozen";
    auto it = by_token.find(p.token);
    ASSERT_NE(it, by_token.end()) << "it reported no write for that token";
    EXPECT_EQ(it->second.outcome, kStale)
        << "its late write was not rejected with LD001";
    EXPECT_FALSE(it->second.released)
        << "dlock.release found its lease still held";
  }
  EXPECT_GE(stale, static_cast<std::int64_t>(pauses.size()));
  EXPECT_GE(stale, 1) << "no late write was rejected";
  EXPECT_TRUE(bad_rejections.empty()) << stress::join(bad_rejections);
  EXPECT_EQ(no_row, 0) << "a fenced write matched no row";

  // Acknowledged writes: the values 1..N, each once, tokens strictly
  // increasing in that order.
  EXPECT_TRUE(repeated_values.empty())
      << "two acknowledged writes wrote the same value (a lost update):"
      << stress::join(repeated_values);
  ASSERT_GT(acknowledged, 0);
  std::int64_t expected_value = 1;
  std::int64_t previous_token = 0;
  std::vector<std::string> order_errors;
  for (const auto& [value, w] : acknowledged_by_value) {
    if (value != expected_value && order_errors.size() < 10) {
      order_errors.push_back("expected value " +
                             std::to_string(expected_value) + ", found " +
                             std::to_string(value));
    }
    if (w.token <= previous_token && order_errors.size() < 10) {
      order_errors.push_back(
          "value " + std::to_string(value) + " was written with token " +
          std::to_string(w.token) + ", not above the previous write's " +
          std::to_string(previous_token));
    }
    expected_value = value + 1;
    previous_token = w.token;
  }
  EXPECT_TRUE(order_errors.empty()) << stress::join(order_errors);
  const std::int64_t last_value = acknowledged_by_value.rbegin()->first;
  const std::int64_t last_token = acknowledged_by_value.rbegin()->second.token;
  EXPECT_EQ(last_value, acknowledged);

  // Every rejected write had a newer acknowledged write to lose to.
  for (const auto& [token, w] : by_token) {
    if (w.outcome == kStale) {
      EXPECT_LT(token, last_token)
          << "token " << token << " was rejected but no higher token wrote";
    }
  }

  // The database agrees: the audit holds exactly the acknowledged writes,
  // and the counter counts each of them once.
  dlock::pq::Connection c;
  dlock::pq::Result audit = c.exec(
      "SELECT token, value FROM fence_stress.writes ORDER BY value, token");
  EXPECT_EQ(audit.rows(), acknowledged)
      << "audit rows vs acknowledged writes reported";
  std::set<std::pair<std::int64_t, std::int64_t>> audited, reported;
  for (int i = 0; i < audit.rows(); ++i) {
    audited.emplace(audit.int64(i, 0), audit.int64(i, 1));
  }
  for (const auto& [token, w] : by_token) {
    if (w.outcome == kAcknowledged) reported.emplace(token, w.value);
  }
  EXPECT_EQ(audited, reported)
      << "the audit's (token, value) pairs differ from what workers reported";

  dlock::pq::Result row =
      c.exec("SELECT n, fence_token FROM fence_stress.counter WHERE id = 1");
  EXPECT_EQ(row.int64(0, 0), acknowledged)
      << "the counter differs from the number of acknowledged writes";
  EXPECT_EQ(row.int64(0, 1), last_token)
      << "the row's fence is not the last acknowledged write's token";

  dlock::pq::Result lease =
      c.exec("SELECT state FROM dlock.leases WHERE name = $1", kLease);
  ASSERT_EQ(lease.rows(), 1);
  EXPECT_NE(lease.value(0, 0), "held") << "a worker left the lease held";
}

}  // namespace
