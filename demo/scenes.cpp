// The scenes: how the director disrupts the current holder. Adding a scene
// means one more entry in scenes() and, for a new kind of disruption, a
// play function (and perhaps an after_takeover one) here.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "director.h"

namespace demo {

using std::chrono::milliseconds;

std::vector<Scene> Director::scenes() const {
  return {{"a holder dies: SIGKILL while it holds the lease",
           milliseconds(4'500), &Director::kill_holder, nullptr},
          {"a holder pauses: SIGSTOP while it prepares its fenced write",
           milliseconds(9'000), &Director::pause_holder,
           &Director::resume_paused_holder}};
}

// Scene: SIGKILL the holder. Nothing releases its lease; it must expire.
bool Director::kill_holder(const Holder& victim) {
  const int id = victim.worker;
  workers_.kill(id - 1);
  // The server notices the lost client on its own; wait for that so that
  // nothing the worker sent can still change the lease or its record.
  wait_for_backend_exit(id);

  const std::optional<std::string> expires = held_until(victim.token);
  std::int64_t marked = db_->exec(
                               "UPDATE dlock_demo.holds SET ended = 'killed'"
                               " WHERE token = $1 AND ended IS NULL",
                               victim.token)
                            .affected();
  if (!expires || marked != 1) {
    say(worker_name(id) + " had already let go of token " +
        std::to_string(victim.token) + " when it died");
    return false;
  }
  say(worker_name(id) + " (pid " + std::to_string(worker(id).pid) +
      ") killed with SIGKILL while holding token " +
      std::to_string(victim.token));
  say("its lease is not released: it stays held until it expires at " +
      offset(*expires));
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
  const std::optional<std::string> expires = held_until(victim.token);
  if (shared_.of(id).token != victim.token || !expires) {
    workers_.resume(id - 1);
    say(worker_name(id) + " had already sent its write for token " +
        std::to_string(victim.token) + " when paused; resumed it at once");
    return false;
  }
  say(worker_name(id) + " (pid " + std::to_string(worker(id).pid) +
      ") paused with SIGSTOP while holding token " +
      std::to_string(victim.token) + ", before sending its fenced write");
  say("it still believes it holds the lease, which expires at " +
      offset(*expires));
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
    dlock::pq::Result r = db_->exec(
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
  say(worker_name(id) + " resumed with SIGCONT after " +
      two_decimals(out.paused_s) + " s paused (ttl " + kTtl +
      "); unaware, it sends its fenced write"
      " with token " +
      std::to_string(victim.token));

  // Its write's outcome, read together with the report row in one snapshot.
  std::string error;
  forked::poll_until(milliseconds(5'000), milliseconds(2), [&] {
    dlock::pq::Result r = db_->exec(
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
  print_report_row(*db_);
  if (out.row_fence == out.newer_token && out.newer_token != 0) {
    std::printf(
        "  The row holds only %s's write (token %lld); %s's late write"
        " never reached it.\n\n",
        worker_name(out.newer_worker).c_str(),
        static_cast<long long>(out.newer_token), worker_name(id).c_str());
  } else {
    std::printf("  The row holds a write with token %lld by %s.\n\n",
                static_cast<long long>(out.row_fence),
                out.row_written_by.c_str());
  }
  std::fflush(stdout);
  notes_.pause = out;
}

}  // namespace demo
