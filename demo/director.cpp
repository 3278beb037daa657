#include "director.h"

#include <signal.h>

#include <cstdio>
#include <thread>
#include <utility>

namespace demo {

namespace {

using std::chrono::milliseconds;

constexpr auto kRunFor = milliseconds(15'000);
// The director disrupts a holder only this soon after its work began, so
// the holder is sure to be still preparing (kWorkMinMs), its write not yet
// sent, when hit.
constexpr auto kFreshHold = milliseconds(40);
static_assert(kFreshHold < milliseconds(kWorkMinMs));

}  // namespace

Director::Director(Shared& shared, std::string t0)
    : shared_(shared), t0_(std::move(t0)), began_(Clock::now()) {}

int Director::run() {
  std::printf(
      "\n%d worker processes race for lease \"%s\" (ttl %s) for %lld s.\n"
      "Each holder prepares the report for %d-%d ms, writes it to\n"
      "dlock_demo.report with dlock.fenced_update() and its token, and\n"
      "releases; every hold and write is recorded in dlock_demo.holds.\n\n",
      kWorkers, kLease, kTtl, static_cast<long long>(kRunFor.count() / 1000),
      kWorkMinMs, kWorkMaxMs);
  start_workers();
  db_.emplace("application_name='dlock-demo director'");
  db_->exec("SET client_min_messages = warning");

  for (const Scene& scene : scenes()) {
    ++notes_.scenes_planned;
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
      ++notes_.scenes_hit;
      wait_for_takeover(victim);
      if (scene.after_takeover) (this->*scene.after_takeover)(victim);
    } else {
      say("the scene found no holder to act on");
    }
  }

  std::this_thread::sleep_until(began_ + kRunFor);
  stop_workers();

  print_timeline(*db_, t0_, notes_);
  print_leases_view(*db_);
  bool ok = run_checks(*db_, t0_, notes_);

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

void Director::start_workers() {
  workers_.start(
      kWorkers,
      [this](int index) { run_worker(index + 1, shared_.of(index + 1)); },
      SIGTERM);  // a worker outliving the director finishes its hold first
  std::string pids;
  for (int i = 0; i < workers_.size(); ++i) {
    pids += " " + std::to_string(workers_[i].pid);
  }
  say("started " + worker_name(1) + " .. " + worker_name(kWorkers) + ", pids" +
      pids);
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

// The current holder, once it is at most kFreshHold into its work. The
// dlock.leases view says who holds the lease (owner "worker-N"); the
// worker's slot says how long ago it began working.
bool Director::find_fresh_holder(Holder& out, milliseconds give_up_after) {
  return forked::poll_until(give_up_after, milliseconds(2), [&] {
    dlock::pq::Result r = db_->exec(
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

void Director::wait_for_backend_exit(int worker) {
  bool gone = forked::poll_until(milliseconds(5'000), milliseconds(5), [&] {
    return db_->exec(
                  "SELECT count(*) FROM pg_stat_activity"
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
    dlock::pq::Result r = db_->exec(
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

std::optional<std::string> Director::held_until(std::int64_t token) {
  dlock::pq::Result lease = db_->exec(
      "SELECT token, state, expires_at FROM dlock.leases WHERE name = $1",
      kLease);
  if (lease.rows() == 1 && lease.int64(0, 0) == token &&
      lease.value(0, 1) == "held") {
    return lease.value(0, 2);
  }
  return std::nullopt;
}

void Director::say(const std::string& what) const {
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - began_).count();
  std::printf("  [%5.2f s] %s\n", elapsed, what.c_str());
  std::fflush(stdout);
}

std::string Director::offset(const std::string& ts) {
  return "+" +
         db_->exec(
                "SELECT to_char(extract(epoch FROM $1::timestamptz"
                " - $2::timestamptz), 'FM990.000')",
                ts, t0_)
             .value(0, 0) +
         " s";
}

}  // namespace demo
