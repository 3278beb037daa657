// The watchdog: a small process that enforces the local deadline of a
// lease on COMMAND's process group, so that the deadline does not depend
// only on dlock, which can be stopped (SIGSTOP of dlock or of its process
// group), killed or starved.
//
// dlock forks it while it has a single thread, before the keeper starts.
// The watchdog makes a session and process group of its own (setsid):
// stopping dlock's group does not stop it, and it is not in COMMAND's group
// either, where `kill 0` or a stop of the group by COMMAND would reach it
// and where it would count as a live member of the group. It keeps only its
// end of a socket pair with dlock (SOCK_SEQPACKET: one Order a message) and
// runs async-signal-safe calls alone: no libpq, no threads, no allocation.
//
// Its loop, on CLOCK_BOOTTIME (the keeper's BootClock, local_deadline.h),
// waiting in poll() on the socket and a timerfd set to the next instant it
// must act at (so that a suspended machine's time counts, and an instant
// passed while the watchdog was stopped is acted on at once on resume):
//   - an Order names the group to watch and the newest local deadline;
//   - at the deadline with no newer one: SIGTERM (and SIGCONT) to the group,
//     then SIGKILL kill_after later, as dlock itself does; it tells dlock it
//     fired (one byte, 'F'). If it wakes past deadline + kill_after (the
//     whole machine was paused), SIGKILL at once;
//   - the socket ends (dlock died, even by SIGKILL): SIGKILL to the group at
//     once, then it exits.
// dlock sees the watchdog's end as the end of its socket, and takes it as a
// lost lease: COMMAND never runs unwatched. stop() kills the watchdog before
// COMMAND's group leader is reaped, so its group id is never signalled once
// it may be reused.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <dlock/local_deadline.h>

namespace dlock::cli {

// What dlock tells the watchdog: watch process group `group` until
// `deadline_ns`, CLOCK_BOOTTIME nanoseconds.
struct Order {
  std::int64_t group = 0;
  std::int64_t deadline_ns = 0;
};

// The watchdog's decisions, pure (no process, no clock): what to send the
// group at a given instant and when to look again.
class Watch {
 public:
  explicit Watch(std::int64_t kill_after_ns) : kill_after_ns_(kill_after_ns) {}

  // The first order names the group; a later one may move the deadline
  // later, never earlier, nor after the watch has fired, nor to another
  // group.
  void take(const Order& o);

  struct Step {
    int signo = 0;             // 0, SIGTERM or SIGKILL: send it to the group
    std::int64_t wake_at = 0;  // when to ask again; 0: only on a new order
  };
  // What to do at `now`. Called again at once after a signal.
  Step step(std::int64_t now);

  pid_t group() const { return static_cast<pid_t>(group_); }
  bool fired() const { return stage_ != Stage::watching; }

 private:
  enum class Stage { watching, terminated, killed };
  std::int64_t kill_after_ns_;
  std::int64_t group_ = 0;
  std::int64_t deadline_ns_ = 0;
  Stage stage_ = Stage::watching;
};

// dlock reaps its children itself (the watchdog, COMMAND): with SIGCHLD
// ignored, as a parent's SIG_IGN survives exec, the kernel would reap them
// at their end, their status lost and their pid, COMMAND's group id, free
// for reuse while dlock still signals it. Sets SIGCHLD back to SIG_DFL,
// which COMMAND then inherits. Call it before forking a child.
void reap_children_ourselves();

// dlock's side of the watchdog process.
class Watchdog {
 public:
  // Forks the watchdog and returns once it is ready. Call it while the
  // process has a single thread. Throws std::system_error.
  explicit Watchdog(std::chrono::milliseconds kill_after);
  // stop().
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Watch process group `group` until `deadline`. Sent only when it
  // changes; never blocks (a watchdog that does not read keeps the older,
  // earlier deadline).
  void watch(pid_t group, client::TimePoint deadline);

  // nullopt while the watchdog watches; else why not, on one line: it
  // fired at the local deadline, or it ended.
  std::optional<std::string> failure();
  // True once it has said it fired.
  bool fired() const { return fired_; }

  // Kills the watchdog and reaps it. Call it before COMMAND's group leader
  // is reaped.
  void stop();

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;  // -1 once reaped
  int fd_ = -1;
  Order sent_;
  bool fired_ = false;
  std::optional<std::string> ended_;
};

}  // namespace dlock::cli
