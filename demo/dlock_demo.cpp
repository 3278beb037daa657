// dlock demo: six worker processes race for the lease "nightly-report".
//
// Each worker loops: wait for the lease with dlock.acquire(), record the
// hold in dlock_demo.holds (in the grant's own transaction, so a recorded
// hold and a granted lease are the same thing), prepare the report for
// 100-400 ms, write it to the row dlock_demo.report with
// dlock.fenced_update() and its token, release, and record how the write
// and the hold ended. Midway, the director (the parent process) finds the
// current holder in dlock.leases and disrupts it: a scene.
//
//   1. A holder dies: SIGKILL. Its lease stays held until it expires on the
//      server clock, and only then does another worker take over, with a
//      higher token.
//   2. A holder pauses: SIGSTOP while it prepares its write, like a long
//      garbage-collection pause. Its lease expires, another worker takes
//      over with a higher token and writes the report. When the paused
//      worker is resumed (SIGCONT) it still believes it holds the lease and
//      sends its write: the report row carries the newer token in its fence
//      column, so dlock.fenced_update() rejects the write with SQLSTATE
//      LD001 and the row keeps the newer holder's write.
//
// At the end the director prints the timeline, the dlock.leases view and
// checks computed by SQL from the holds and report tables, and exits
// non-zero if one fails.
//
// Adding a scene means one more entry in scenes(): the director finds a
// fresh holder, plays the scene, waits for the takeover and runs the
// scene's after_takeover(). A worker whose release returns false records
// its hold as 'lost', which the timeline and the checks treat like a
// killed hold (it ended at its expiry).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "forked_workers.h"
#include "pg_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kLease[] = "nightly-report";
constexpr char kTtl[] = "2 s";            // lease time-to-live
constexpr auto kTtlDuration = milliseconds(2'000);  // the same, for the clock
constexpr char kWaitTimeout[] = "1 s";    // how long one acquire() waits
constexpr int kWorkers = 6;
constexpr auto kRunFor = milliseconds(15'000);
constexpr int kWorkMinMs = 100;
constexpr int kWorkMaxMs = 400;
// The director disrupts a holder only this soon after its work began, so
// the holder is sure to be still preparing (kWorkMinMs), its write not yet
// sent, when hit.
constexpr auto kFreshHold = milliseconds(40);

std::string worker_name(int id) { return "worker-" + std::to_string(id); }

std::string app_name(int id) { return "dlock-demo " + worker_name(id); }

// ------------------------------------------------------------------ shared
// What each worker is doing, in memory shared by all processes (lock-free
// atomics work across processes). Workers are 1..kWorkers.

struct Slot {
  std::atomic<std::int64_t> token{0};          // held while preparing, else 0
  std::atomic<std::int64_t> work_began_ns{0};  // forked::now_ns()
};

struct Shared {
  Slot slots[kWorkers];
  Slot& of(int worker) { return slots[worker - 1]; }
};

// ------------------------------------------------------------------ worker

// Writes the report through dlock.fenced_update() with the hold's token and
// records the outcome in the hold's row. The row accepts the write only if
// its fence_token is not above the token (and then sets it to the token);
// otherwise the call fails with LD001 (stale fencing token) and nothing
// changes. An accepted write and its record commit together.
void write_report(pgc::Connection& c, const std::string& owner,
                  const std::string& token) {
  c.exec("BEGIN");
  pgc::Result w = c.try_exec(
      "SELECT dlock.fenced_update('dlock_demo.report', $1::bigint,"
      "         jsonb_build_object('written_by', $2::text,"
      "                            'written_at', clock_timestamp()),"
      "         jsonb_build_object('name', $3::text))",
      token, owner, kLease);
  if (w.ok()) {
    c.exec(
        "UPDATE dlock_demo.holds"
        "   SET wrote = CASE WHEN $2::bigint = 1 THEN 'accepted'"
        "                    ELSE 'no row' END,"
        "       wrote_at = clock_timestamp()"
        " WHERE token = $1::bigint",
        token, w.value(0, 0));
    c.exec("COMMIT");
    return;
  }
  c.exec("ROLLBACK");
  if (w.sqlstate() != "LD001") throw pgc::PgError(w.sqlstate(), w.error());
  // Rejected: a newer holder has written the row. Keep the server's words.
  const char* message = PQresultErrorField(w.get(), PG_DIAG_MESSAGE_PRIMARY);
  const char* detail = PQresultErrorField(w.get(), PG_DIAG_MESSAGE_DETAIL);
  c.exec(
      "UPDATE dlock_demo.holds"
      "   SET wrote = 'rejected', wrote_at = clock_timestamp(),"
      "       write_error = $2"
      " WHERE token = $1::bigint",
      token,
      std::string(message ? message : "") +
          (detail ? std::string("\n") + detail : std::string()));
}

void run_worker(int id, Slot& slot) {
  // Opened after the fork: a libpq connection must never be shared
  // between processes.
  pgc::Connection c("application_name='" + app_name(id) + "'");
  c.exec("SET client_min_messages = warning");
  const std::string owner = worker_name(id);
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> work_ms(kWorkMinMs, kWorkMaxMs);
  std::uniform_int_distribution<int> rest_ms(50, 150);

  while (!forked::stop_requested()) {
    // Grant and record in one transaction: if this process dies before
    // COMMIT, neither the lease nor the record exists.
    c.exec("BEGIN");
    pgc::Result lease = c.try_exec(
        "SELECT l.token, l.acquired_at, l.expires_at"
        "  FROM dlock.acquire($1, $2::interval, $3::interval, $4) AS l",
        kLease, kTtl, kWaitTimeout, owner);
    if (!lease.ok()) {
      c.exec("ROLLBACK");
      if (lease.sqlstate() == "55P03") continue;  // still busy: ask again
      throw pgc::PgError(lease.sqlstate(), lease.error());
    }
    const std::string token = lease.value(0, 0);
    c.exec(
        "INSERT INTO dlock_demo.holds (worker, token, acquired_at, expires_at)"
        " VALUES ($1, $2::bigint, $3::timestamptz, $4::timestamptz)",
        id, token, lease.value(0, 1), lease.value(0, 2));
    c.exec("COMMIT");

    // Prepare the report. A holder paused here (SIGSTOP) wakes up believing
    // it still holds the lease and goes on to write.
    slot.token = std::stoll(token);
    slot.work_began_ns = forked::now_ns();
    std::this_thread::sleep_for(milliseconds(work_ms(rng)));
    slot.token = 0;

    write_report(c, owner, token);

    c.exec("BEGIN");
    bool released =
        c.exec("SELECT dlock.release($1, $2::bigint)", kLease, token)
            .boolean(0, 0);
    // A false release means the lease was lost while working (it expired
    // and may have been taken over): the hold ended at its expiry.
    c.exec(
        "UPDATE dlock_demo.holds"
        "   SET ended = CASE WHEN $2::boolean THEN 'released' ELSE 'lost' END,"
        "       released_at = (SELECT l.released_at FROM dlock.leases AS l"
        "                       WHERE l.name = $3 AND l.token = $1::bigint"
        "                         AND $2::boolean)"
        " WHERE token = $1::bigint",
        token, released, kLease);
    c.exec("COMMIT");
    std::this_thread::sleep_for(milliseconds(rest_ms(rng)));
  }
}

// ------------------------------------------------------------------ director

// The holder a scene acts on.
struct Holder {
  int worker = 0;
  std::int64_t token = 0;
};

class Director;

// A disruption of the current holder. play() returns true if it hit a
// holder while it held the lease; the director then waits for another
// worker to take over and runs after_takeover(), if any.
struct Scene {
  const char* title;
  milliseconds at;  // earliest start, from the beginning of the run
  bool (Director::*play)(const Holder&);
  void (Director::*after_takeover)(const Holder&);
};

class Director {
 public:
  Director(Shared& shared, std::string t0)
      : shared_(shared), t0_(std::move(t0)), began_(Clock::now()) {}
  Director(const Director&) = delete;
  Director& operator=(const Director&) = delete;

  int run();

 private:
  std::vector<Scene> scenes() const {
    return {{"a holder dies: SIGKILL while it holds the lease",
             milliseconds(4'500), &Director::kill_holder, nullptr},
            {"a holder pauses: SIGSTOP while it prepares its fenced write",
             milliseconds(9'000), &Director::pause_holder,
             &Director::resume_paused_holder}};
  }

  void start_workers();
  void stop_workers();
  bool find_fresh_holder(Holder& out, milliseconds give_up_after);
  bool kill_holder(const Holder& victim);
  bool pause_holder(const Holder& victim);
  void resume_paused_holder(const Holder& victim);
  // The harness counts workers from 0, the demo from 1.
  const forked::Worker& worker(int id) const { return workers_[id - 1]; }
  void wait_for_backend_exit(int worker);
  void wait_for_takeover(const Holder& victim);

  void print_timeline();
  void print_leases_view();
  void print_report_row();
  bool run_checks();

  // Seconds since the run began, for live messages.
  double elapsed() const {
    return std::chrono::duration<double>(Clock::now() - began_).count();
  }
  void say(const std::string& what) const {
    std::printf("  [%5.2f s] %s\n", elapsed(), what.c_str());
    std::fflush(stdout);
  }
  // A server timestamp as seconds after the run began, e.g. "+6.613 s".
  std::string offset(const std::string& ts) {
    return "+" +
           db_->exec("SELECT to_char(extract(epoch FROM $1::timestamptz"
                     " - $2::timestamptz), 'FM990.000')",
                     ts, t0_)
               .value(0, 0) +
           " s";
  }

  Shared& shared_;
  std::string t0_;  // server clock at the start; timeline offsets use it
  Clock::time_point began_;
  // If the director fails midway, no worker outlives it.
  forked::Workers workers_{[](int index) { return worker_name(index + 1); }};
  std::optional<pgc::Connection> db_;
  int scenes_hit_ = 0;
  int scenes_planned_ = 0;

  // What the pause scene saw, for the checks.
  struct PauseOutcome {
    int worker = 0;
    std::int64_t token = 0;         // the paused holder's
    std::int64_t newer_token = 0;   // the first write after it, accepted
    int newer_worker = 0;
    double paused_s = 0;            // from SIGSTOP to SIGCONT
    std::string wrote;              // the paused holder's write: 'rejected'?
    std::int64_t row_fence = 0;     // the report row right after it
    std::string row_written_by;
  };
  std::optional<PauseOutcome> pause_;
  Clock::time_point paused_at_;
};

void Director::start_workers() {
  workers_.start(
      kWorkers,
      [this](int index) { run_worker(index + 1, shared_.of(index + 1)); },
      SIGTERM);  // a worker outliving the director finishes its hold first
  std::string pids;
  for (int i = 0; i < workers_.size(); ++i) {
    pids += " " + std::to_string(workers_[i].pid);
  }
  say("started " + worker_name(1) + " .. " + worker_name(kWorkers) +
      ", pids" + pids);
}

// The current holder, once it is at most kFreshHold into its work. The
// dlock.leases view says who holds the lease (owner "worker-N"); the
// worker's slot says how long ago it began working.
bool Director::find_fresh_holder(Holder& out, milliseconds give_up_after) {
  return forked::poll_until(give_up_after, milliseconds(2), [&] {
    pgc::Result r = db_->exec(
        "SELECT owner, token FROM dlock.leases"
        " WHERE name = $1 AND state = 'held'",
        kLease);
    if (r.rows() != 1) return false;
    const std::string owner = r.value(0, 0);
    const std::int64_t token = r.int64(0, 1);
    for (int id = 1; id <= kWorkers; ++id) {
      const Slot& slot = shared_.of(id);
      if (worker(id).running && owner == worker_name(id) &&
          slot.token == token &&
          forked::now_ns() - slot.work_began_ns <
              std::chrono::nanoseconds(kFreshHold).count()) {
        out = Holder{id, token};
        return true;
      }
    }
    return false;
  });
}

// Scene: SIGKILL the holder. Nothing releases its lease; it must expire.
bool Director::kill_holder(const Holder& victim) {
  const int id = victim.worker;
  workers_.kill(id - 1);
  // The server notices the lost client on its own; wait for that so that
  // nothing the worker sent can still change the lease or its record.
  wait_for_backend_exit(id);

  pgc::Result lease = db_->exec(
      "SELECT token, state, expires_at FROM dlock.leases WHERE name = $1",
      kLease);
  bool still_held = lease.rows() == 1 && lease.int64(0, 0) == victim.token &&
                    lease.value(0, 1) == "held";
  std::int64_t marked =
      db_->exec(
             "UPDATE dlock_demo.holds SET ended = 'killed'"
             " WHERE token = $1 AND ended IS NULL",
             victim.token)
          .affected();
  if (!still_held || marked != 1) {
    say(worker_name(id) + " had already let go of token " +
        std::to_string(victim.token) + " when it died");
    return false;
  }
  say(worker_name(id) + " (pid " + std::to_string(worker(id).pid) +
      ") killed with SIGKILL while holding token " +
      std::to_string(victim.token));
  say("its lease is not released: it stays held until it expires at " +
      offset(lease.value(0, 2)));
  return true;
}

// Scene: SIGSTOP the holder while it prepares its write, as a long
// garbage-collection pause would. Its lease runs out while it is stopped;
// it keeps believing it holds it.
bool Director::pause_holder(const Holder& victim) {
  const int id = victim.worker;
  if (!workers_.pause(id - 1)) {
    say(worker_name(id) + " ended before it could be paused");
    return false;
  }
  paused_at_ = Clock::now();
  // It is stopped, so its slot cannot change: is it still preparing the
  // write of this hold, and is the lease still its own?
  pgc::Result lease = db_->exec(
      "SELECT token, state, expires_at FROM dlock.leases WHERE name = $1",
      kLease);
  bool still_held = lease.rows() == 1 && lease.int64(0, 0) == victim.token &&
                    lease.value(0, 1) == "held";
  if (shared_.of(id).token != victim.token || !still_held) {
    workers_.resume(id - 1);
    say(worker_name(id) + " had already sent its write for token " +
        std::to_string(victim.token) + " when paused; resumed it at once");
    return false;
  }
  say(worker_name(id) + " (pid " + std::to_string(worker(id).pid) +
      ") paused with SIGSTOP while holding token " +
      std::to_string(victim.token) + ", before sending its fenced write");
  say("it still believes it holds the lease, which expires at " +
      offset(lease.value(0, 2)));
  return true;
}

// After the takeover: wait for the newer holder's fenced write, resume the
// paused holder (by then paused longer than its ttl) and show its write
// being rejected and the report row it could not touch.
void Director::resume_paused_holder(const Holder& victim) {
  const int id = victim.worker;
  PauseOutcome out;
  out.worker = id;
  out.token = victim.token;

  forked::poll_until(milliseconds(5'000), milliseconds(2), [&] {
    pgc::Result r = db_->exec(
        "SELECT worker, token,"
        "       to_char(extract(epoch FROM wrote_at - $2::timestamptz),"
        "               'FM990.000')"
        "  FROM dlock_demo.holds"
        " WHERE token > $1 AND wrote = 'accepted'"
        " ORDER BY token LIMIT 1",
        victim.token, t0_);
    if (r.rows() != 1) return false;
    out.newer_worker = static_cast<int>(r.int64(0, 0));
    out.newer_token = r.int64(0, 1);
    say(worker_name(out.newer_worker) +
        " wrote the report with dlock.fenced_update(..., token " +
        r.value(0, 1) + ", ...): accepted at +" + r.value(0, 2) +
        " s; the row's fence_token is now " + r.value(0, 1));
    return true;
  });
  if (out.newer_token == 0) say("no newer holder wrote the report within 5 s");

  // Paused for longer than its ttl (in practice it already is: the newer
  // holder could only take over once the lease had expired).
  std::this_thread::sleep_until(paused_at_ + kTtlDuration + milliseconds(1));
  workers_.resume(id - 1);
  out.paused_s =
      std::chrono::duration<double>(Clock::now() - paused_at_).count();
  char paused_for[32];
  std::snprintf(paused_for, sizeof paused_for, "%.2f", out.paused_s);
  say(worker_name(id) + " resumed with SIGCONT after " + paused_for +
      " s paused (ttl " + kTtl + "); unaware, it sends its fenced write"
      " with token " + std::to_string(victim.token));

  // Its write's outcome, read together with the report row in one snapshot.
  std::string error;
  forked::poll_until(milliseconds(5'000), milliseconds(2), [&] {
    pgc::Result r = db_->exec(
        "SELECT h.wrote, coalesce(h.write_error, ''),"
        "       r.fence_token, coalesce(r.written_by, '')"
        "  FROM dlock_demo.holds AS h, dlock_demo.report AS r"
        " WHERE h.token = $1 AND h.wrote IS NOT NULL AND r.name = $2",
        victim.token, kLease);
    if (r.rows() != 1) return false;
    out.wrote = r.value(0, 0);
    error = r.value(0, 1);
    out.row_fence = r.isnull(0, 2) ? 0 : r.int64(0, 2);
    out.row_written_by = r.value(0, 3);
    return true;
  });
  if (out.wrote == "rejected") {
    say(worker_name(id) + "'s fenced_update with token " +
        std::to_string(victim.token) + " was REJECTED: SQLSTATE LD001");
    std::size_t nl = error.find('\n');
    std::printf("             ERROR:  %s\n", error.substr(0, nl).c_str());
    if (nl != std::string::npos) {
      std::printf("             DETAIL:  %s\n", error.substr(nl + 1).c_str());
    }
  } else if (out.wrote.empty()) {
    say(worker_name(id) + " did not report its write within 5 s");
  } else {
    say(worker_name(id) + "'s fenced write with token " +
        std::to_string(victim.token) + " ended '" + out.wrote +
        "', but it should have been rejected");
  }
  print_report_row();
  if (out.row_fence == out.newer_token && out.newer_token != 0) {
    std::printf("  The row holds only %s's write (token %lld); %s's late write"
                " never reached it.\n\n",
                worker_name(out.newer_worker).c_str(),
                static_cast<long long>(out.newer_token),
                worker_name(id).c_str());
  } else {
    std::printf("  The row holds a write with token %lld by %s.\n\n",
                static_cast<long long>(out.row_fence),
                out.row_written_by.c_str());
  }
  std::fflush(stdout);
  pause_ = out;
}

void Director::wait_for_backend_exit(int worker) {
  bool gone = forked::poll_until(milliseconds(5'000), milliseconds(5), [&] {
    return db_->exec("SELECT count(*) FROM pg_stat_activity"
                     " WHERE application_name = $1",
                     app_name(worker))
               .int64(0, 0) == 0;
  });
  if (!gone) {
    say("warning: the server still serves " + worker_name(worker) +
        "'s connection");
  }
}

void Director::wait_for_takeover(const Holder& victim) {
  bool taken = forked::poll_until(milliseconds(5'000), milliseconds(2), [&] {
    pgc::Result r = db_->exec(
        "SELECT owner, token, acquired_at FROM dlock.leases"
        " WHERE name = $1 AND token > $2",
        kLease, victim.token);
    if (r.rows() != 1) return false;
    say(r.value(0, 0) + " took over with token " + r.value(0, 1) + " at " +
        offset(r.value(0, 2)));
    return true;
  });
  if (!taken) say("nobody took over within 5 s");
}

void Director::stop_workers() {
  say("time is up: asking the workers to finish their current hold and stop");
  workers_.stop_all(milliseconds(10'000));
  for (int id = 1; id <= kWorkers; ++id) {
    if (worker(id).forced) {
      say(worker_name(id) + " did not stop within 10 s; killed it");
    }
  }
}

int Director::run() {
  std::printf(
      "\n%d worker processes race for lease \"%s\" (ttl %s) for %lld s.\n"
      "Each holder prepares the report for 100-400 ms, writes it to\n"
      "dlock_demo.report with dlock.fenced_update() and its token, and\n"
      "releases; every hold and write is recorded in dlock_demo.holds.\n\n",
      kWorkers, kLease, kTtl,
      static_cast<long long>(kRunFor.count() / 1000));
  start_workers();
  db_.emplace("application_name='dlock-demo director'");
  db_->exec("SET client_min_messages = warning");

  for (const Scene& scene : scenes()) {
    ++scenes_planned_;
    std::this_thread::sleep_until(began_ + scene.at);
    say("scene: " + std::string(scene.title));
    Holder victim;
    bool hit = false;
    for (int attempt = 0; attempt < 3 && !hit; ++attempt) {
      if (!find_fresh_holder(victim, milliseconds(3'000))) break;
      say("dlock.leases: " + worker_name(victim.worker) +
          " holds the lease with token " + std::to_string(victim.token));
      hit = (this->*scene.play)(victim);
    }
    if (hit) {
      ++scenes_hit_;
      wait_for_takeover(victim);
      if (scene.after_takeover) (this->*scene.after_takeover)(victim);
    } else {
      say("the scene found no holder to act on");
    }
  }

  std::this_thread::sleep_until(began_ + kRunFor);
  stop_workers();

  print_timeline();
  print_leases_view();
  bool ok = run_checks();

  // Workers that were not killed by a scene must have exited cleanly.
  for (int id = 1; id <= kWorkers; ++id) {
    const forked::Worker& w = worker(id);
    if (!w.killed && (w.forced || !w.exited_cleanly())) {
      std::printf("  [FAILED] %s ended abnormally (see its message above)\n",
                  worker_name(id).c_str());
      ok = false;
    }
  }
  std::printf("\n%s\n", ok ? "All checks passed." : "SOME CHECKS FAILED.");
  return ok ? 0 : 1;
}

void Director::print_timeline() {
  pgc::Result r = db_->exec(
      "SELECT worker, token,"
      "       to_char(extract(epoch FROM acquired_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       to_char(extract(epoch FROM coalesce(released_at, expires_at)"
      "                                 - acquired_at), 'FM990.000'),"
      "       coalesce(ended, 'still held'),"
      "       to_char(extract(epoch FROM expires_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       lag(worker) OVER w, lag(ended) OVER w,"
      "       coalesce(wrote, '-'),"
      "       to_char(extract(epoch FROM wrote_at - $1::timestamptz),"
      "               'FM990.000')"
      "  FROM dlock_demo.holds WINDOW w AS (ORDER BY token)"
      " ORDER BY token",
      t0_);
  std::printf("\nTimeline of lease \"%s\" (seconds since the start, server "
              "clock)\n\n",
              kLease);
  std::printf("  %9s  %-9s  %6s  %8s  %-15s  %s\n", "acquired", "holder",
              "token", "held", "fenced write", "how the hold ended");
  std::printf("  %9s  %-9s  %6s  %8s  %-15s  %s\n", "---------", "---------",
              "------", "--------", "---------------", "------------------");
  for (int i = 0; i < r.rows(); ++i) {
    const std::int64_t token = r.int64(i, 1);
    const bool paused = pause_ && pause_->token == token;
    std::string ended = r.value(i, 4);
    std::string how = ended;
    if (ended == "killed") {
      how = "killed (SIGKILL); lease expired at +" + r.value(i, 5) + " s";
    } else if (ended == "lost" && paused) {
      char paused_for[32];
      std::snprintf(paused_for, sizeof paused_for, "%.2f", pause_->paused_s);
      how = std::string("paused (SIGSTOP) ") + paused_for +
            " s; lease expired at +" + r.value(i, 5) +
            " s; its write came at +" + r.value(i, 9) + " s";
    } else if (ended == "lost") {
      how = "lost: release came too late; lease expired at +" +
            r.value(i, 5) + " s";
    }
    std::string prev = r.value(i, 7);
    if (prev == "killed" || prev == "lost") {
      how += "   <- took over from worker-" + r.value(i, 6);
    }
    std::string wrote = r.value(i, 8);
    if (wrote == "rejected") wrote = "REJECTED LD001";
    std::printf("  %+8.3fs  worker-%-2s  %6s  %7ss  %-15s  %s\n",
                std::stod(r.value(i, 2)), r.value(i, 0).c_str(),
                r.value(i, 1).c_str(), r.value(i, 3).c_str(), wrote.c_str(),
                how.c_str());
  }
}

// A query's result laid out like psql's aligned format.
void print_table(const pgc::Result& r) {
  std::vector<std::size_t> width(r.cols());
  for (int c = 0; c < r.cols(); ++c) {
    width[c] = std::string(PQfname(r.get(), c)).size();
    for (int i = 0; i < r.rows(); ++i) {
      width[c] = std::max(width[c], r.value(i, c).size());
    }
  }
  auto line = [&](auto cell, char pad, const char* sep) {
    std::string out = "  ";
    for (int c = 0; c < r.cols(); ++c) {
      std::string v = cell(c);
      out += (c ? sep : "") + std::string(1, pad) + v +
             std::string(width[c] - v.size() + 1, pad);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::printf("%s\n", out.c_str());
  };
  line([&](int c) { return std::string(PQfname(r.get(), c)); }, ' ', "|");
  line([&](int) { return std::string(); }, '-', "+");
  for (int i = 0; i < r.rows(); ++i) {
    line([&](int c) { return r.value(i, c); }, ' ', "|");
  }
  std::printf("  (%d row%s)\n", r.rows(), r.rows() == 1 ? "" : "s");
}

void Director::print_leases_view() {
  pgc::Result r = db_->exec(
      "SELECT name, owner, token, state,"
      "       to_char(acquired_at, 'HH24:MI:SS.MS') AS acquired_at,"
      "       to_char(expires_at, 'HH24:MI:SS.MS') AS expires_at,"
      "       valid_for, ttl,"
      "       to_char(released_at, 'HH24:MI:SS.MS') AS released_at,"
      "       acquired_by"
      "  FROM dlock.leases WHERE name = $1",
      kLease);
  std::printf("\nSELECT * FROM dlock.leases;   (times of day, server clock)\n\n");
  print_table(r);
}

void Director::print_report_row() {
  pgc::Result r = db_->exec(
      "SELECT name, written_by,"
      "       to_char(written_at, 'HH24:MI:SS.MS') AS written_at, fence_token"
      "  FROM dlock_demo.report WHERE name = $1",
      kLease);
  std::printf("\n  SELECT * FROM dlock_demo.report;   (right after the paused"
              " holder's late write)\n\n");
  print_table(r);
  std::printf("\n");
}

bool Director::run_checks() {
  std::printf(
      "\nChecks, computed by SQL from dlock_demo.holds and dlock_demo.report\n\n");
  bool all_ok = true;
  auto check = [&](bool ok, const std::string& what) {
    std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
    all_ok = all_ok && ok;
  };

  // A hold ends when it is released; a hold that was never released
  // (killed, or lost) ends when its lease expires.
  pgc::Result s = db_->exec(
      "WITH h AS ("
      "  SELECT token, acquired_at, ended,"
      "         CASE WHEN ended = 'released' THEN released_at"
      "              ELSE expires_at END AS hold_end"
      "    FROM dlock_demo.holds),"
      " o AS ("
      "  SELECT h.*, lag(hold_end) OVER w AS prev_end,"
      "         lag(token) OVER w AS prev_token"
      "    FROM h WINDOW w AS (ORDER BY acquired_at, token))"
      " SELECT count(*),"
      "        count(*) FILTER (WHERE acquired_at < prev_end"
      "                            OR hold_end IS NULL),"
      "        count(*) FILTER (WHERE token <= prev_token),"
      "        count(*) FILTER (WHERE ended IS DISTINCT FROM 'released'),"
      "        min(token), max(token)"
      "   FROM o");
  const std::int64_t holds = s.int64(0, 0);
  const std::int64_t overlaps = s.int64(0, 1);
  const std::int64_t regressions = s.int64(0, 2);
  const std::int64_t unreleased = s.int64(0, 3);
  check(holds >= 2 && overlaps == 0,
        std::to_string(holds) + " holds, " + std::to_string(overlaps) +
            " overlapping: each began at or after the previous one ended");
  check(holds >= 2 && regressions == 0,
        "tokens strictly increased in the order the holds began (" +
            (holds ? s.value(0, 4) + " .. " + s.value(0, 5) : "none") + ")");

  // Every disrupted hold: the next hold began only after its lease expired.
  pgc::Result k = db_->exec(
      "SELECT k.worker, k.token, k.ended,"
      "       to_char(extract(epoch FROM k.expires_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       n.worker, n.token,"
      "       to_char(extract(epoch FROM n.acquired_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       round(extract(epoch FROM n.acquired_at - k.expires_at) * 1000)"
      "         ::bigint,"
      "       n.token IS NOT NULL AND n.acquired_at >= k.expires_at"
      "                           AND n.token > k.token"
      "  FROM dlock_demo.holds AS k"
      "  LEFT JOIN LATERAL (SELECT * FROM dlock_demo.holds AS x"
      "                      WHERE x.token > k.token"
      "                      ORDER BY x.token LIMIT 1) AS n ON true"
      " WHERE k.ended IS DISTINCT FROM 'released'"
      " ORDER BY k.token",
      t0_);
  for (int i = 0; i < k.rows(); ++i) {
    if (k.isnull(i, 5)) {
      check(false, "worker-" + k.value(i, 0) + "'s hold (token " +
                       k.value(i, 1) + ", " + k.value(i, 2) +
                       ") was never taken over");
      continue;
    }
    const std::int64_t gap_ms = k.int64(i, 7);
    const bool paused = pause_ && pause_->token == k.int64(i, 1);
    check(k.boolean(i, 8),
          "worker-" + k.value(i, 0) + " was " +
              (paused ? std::string("paused") : k.value(i, 2)) +
              " holding token " + k.value(i, 1) +
              "; its lease expired at +" + k.value(i, 3) + " s and worker-" +
              k.value(i, 4) + " took over at +" + k.value(i, 6) +
              " s with token " + k.value(i, 5) + " (" +
              std::to_string(gap_ms < 0 ? -gap_ms : gap_ms) + " ms " +
              (gap_ms < 0 ? "BEFORE" : "after") + " the expiry)");
  }
  check(scenes_hit_ == scenes_planned_,
        "scenes that hit a holder while it held the lease: " +
            std::to_string(scenes_hit_) + " of " +
            std::to_string(scenes_planned_));
  check(unreleased == scenes_hit_,
        "every hold not hit by a scene ended with a successful release (" +
            std::to_string(holds - unreleased) + " released, " +
            std::to_string(unreleased) + " not)");

  // The fenced writes, in the order they were made.
  pgc::Result f = db_->exec(
      "WITH a AS ("
      "  SELECT token, worker, lag(token) OVER (ORDER BY wrote_at, token)"
      "                        AS prev_token"
      "    FROM dlock_demo.holds WHERE wrote = 'accepted')"
      " SELECT (SELECT count(*) FROM a),"
      "        (SELECT count(*) FROM a WHERE token <= prev_token),"
      "        (SELECT count(*) FROM dlock_demo.holds"
      "          WHERE wrote = 'rejected'),"
      "        (SELECT count(*) FROM dlock_demo.holds"
      "          WHERE wrote = 'rejected' AND ended IS DISTINCT FROM 'lost'),"
      "        (SELECT count(*) FROM dlock_demo.holds WHERE wrote = 'no row'),"
      "        (SELECT count(*) FROM dlock_demo.holds"
      "          WHERE ended = 'released'"
      "            AND wrote IS DISTINCT FROM 'accepted'),"
      "        (SELECT fence_token IS NOT DISTINCT FROM"
      "                (SELECT max(token) FROM a)"
      "            AND written_by IS NOT DISTINCT FROM"
      "                (SELECT 'worker-' || worker FROM a"
      "                  ORDER BY token DESC LIMIT 1)"
      "           FROM dlock_demo.report WHERE name = $1),"
      "        (SELECT fence_token FROM dlock_demo.report WHERE name = $1)",
      kLease);
  const std::int64_t accepted = f.int64(0, 0);
  const std::int64_t rejected = f.int64(0, 2);
  check(accepted >= 2 && f.int64(0, 1) == 0,
        std::to_string(accepted) +
            " fenced writes accepted, each with a higher token than the"
            " write before it");
  check(f.int64(0, 4) == 0 && f.int64(0, 5) == 0,
        "every hold that released the lease had its fenced write accepted");
  check(rejected >= 1 && f.int64(0, 3) == 0,
        std::to_string(rejected) +
            " fenced write(s) rejected with LD001, each by a holder that had"
            " lost its lease");
  check(!f.isnull(0, 6) && f.boolean(0, 6),
        "the report row holds the last accepted write (fence_token " +
            f.value(0, 7) + ")");
  if (pause_) {
    const PauseOutcome& p = *pause_;
    char paused_for[32];
    std::snprintf(paused_for, sizeof paused_for, "%.2f", p.paused_s);
    check(p.wrote == "rejected" && p.newer_token > p.token &&
              p.row_fence > p.token &&
              p.row_written_by != worker_name(p.worker) &&
              p.paused_s > std::chrono::duration<double>(kTtlDuration).count(),
          worker_name(p.worker) + " was paused " + paused_for + " s (ttl " +
              kTtl + ") holding token " + std::to_string(p.token) + "; " +
              (p.newer_worker ? worker_name(p.newer_worker) : "nobody") +
              " wrote with token " + std::to_string(p.newer_token) +
              " meanwhile; the late write was " +
              (p.wrote == "rejected" ? std::string("rejected with LD001")
               : p.wrote.empty()     ? std::string("never reported")
                                     : "'" + p.wrote + "'") +
              " and the row kept fence_token " + std::to_string(p.row_fence) +
              " (written by " + p.row_written_by + ")");
  }
  return all_ok;
}

// Creates the demo's tables afresh and returns the server clock at the
// start. Uses its own connection, closed before any fork.
std::string set_up_database() {
  pgc::Connection c;
  c.exec("SET client_min_messages = warning");
  pgc::Result ext = c.exec(
      "SELECT count(*) FROM pg_extension WHERE extname = 'dlock'");
  if (ext.int64(0, 0) != 1) {
    throw pgc::PgError("", "the dlock extension is not installed in this "
                           "database; run CREATE EXTENSION dlock first");
  }
  c.exec("DROP SCHEMA IF EXISTS dlock_demo CASCADE");
  c.exec("CREATE SCHEMA dlock_demo");
  c.exec(
      "CREATE TABLE dlock_demo.holds ("
      "  token       bigint PRIMARY KEY,"
      "  worker      int NOT NULL,"
      "  acquired_at timestamptz NOT NULL,"
      "  expires_at  timestamptz NOT NULL,"
      "  released_at timestamptz,"
      "  ended       text CHECK (ended IN ('released', 'killed', 'lost')),"
      "  wrote       text CHECK (wrote IN ('accepted', 'rejected', 'no row')),"
      "  wrote_at    timestamptz,"
      "  write_error text)");
  // The shared resource the lease protects: one report row, written only
  // through dlock.fenced_update(), which keeps the writer's token in
  // fence_token.
  c.exec(
      "CREATE TABLE dlock_demo.report ("
      "  name        text PRIMARY KEY,"
      "  written_by  text,"
      "  written_at  timestamptz,"
      "  fence_token bigint)");
  c.exec("INSERT INTO dlock_demo.report (name) VALUES ($1)", kLease);
  return c.exec("SELECT clock_timestamp()").value(0, 0);
}

}  // namespace

int main() {
  try {
    std::string t0 = set_up_database();
    forked::SharedMemory<Shared> shared;
    Director director(*shared, t0);
    return director.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlock_demo: %s\n", e.what());
    return 2;
  }
}
