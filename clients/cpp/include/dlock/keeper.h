// A keeper holds one lease alive from a background thread, on a connection
// of its own, and says when it is lost.
//
// It renews (dlock.renew, keeping the grant's TTL) once renew_fraction of
// the last valid_for has passed, and keeps a LocalDeadline
// (local_deadline.h). The lease is lost, and on_lost is called from the
// keeper's thread within 100 ms, when:
//   - a renewal is refused (LD001, LD002, LD003, 42501);
//   - the local deadline passes without a successful renewal: the server or
//     the pooler is unreachable or hangs, or this process was paused (the
//     deadline is checked on every wake-up, at least every 50 ms, and a
//     hanging call never delays it);
//   - a dlock_lease_ended notification names the grant (not behind a
//     transaction pooler, where LISTEN does not work) and a renewal sent at
//     once is refused: any role may NOTIFY, so the server's answer decides.
// A failed connection is retried with backoff until the deadline; it is
// never taken as a sign that the lease is still held. Nor is a renewal
// that the server committed without its synchronous standbys' confirmation
// (its wait for them was cancelled): it does not move the deadline, and is
// retried as a failure is. The keeper never releases the lease: its owner
// does, after stop().
//
// The constructor returns once the keeper's connection is up, listening
// (unless behind a pooler), and has renewed the grant once, so a
// force-release from then on is seen at once; or once the lease is lost.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <dlock/lease.h>
#include <dlock/local_deadline.h>

namespace dlock::client {

struct KeeperOptions {
  // libpq conninfo; empty: the PG* environment variables.
  std::string conninfo;
  DeadlinePolicy policy;
  // Through a transaction pooler: no LISTEN, renewals alone decide.
  bool behind_pooler = false;
  // The keeper's session's fallback_application_name (application_name.h):
  // its application_name unless conninfo or PGAPPNAME sets one.
  std::string application_name = "dlock keeper";
  // Called once, from the keeper's thread, with why the lease was lost, on
  // one line ("force-released by ops: deploy", "not renewed in time (...)").
  std::function<void(const std::string& why)> on_lost;
  // Called from the keeper's thread after each successful renewal.
  std::function<void(const Grant&)> on_renewed;
};

class Keeper {
 public:
  // Starts keeping `grant` (as returned by Leases).
  Keeper(Grant grant, KeeperOptions options);
  // Stops the thread; never releases the lease.
  ~Keeper();
  Keeper(const Keeper&) = delete;
  Keeper& operator=(const Keeper&) = delete;

  // The pollable flag: true once the lease is lost.
  bool lost() const { return lost_.load(); }
  // Why it was lost, on one line ("" while held).
  std::string why() const;
  // The grant as last renewed.
  Grant grant() const;
  // The local deadline now.
  TimePoint deadline() const;
  // Stops renewing and joins the thread; lost() keeps its value.
  void stop();

 private:
  void run();
  void renewed(const Grant& grant);
  void lose(const std::string& reason);

  KeeperOptions options_;
  mutable std::mutex mutex_;
  Grant grant_;
  LocalDeadline deadline_;
  std::string why_;
  bool ready_ = false;  // the first renewal is done (or the lease lost)
  std::condition_variable ready_changed_;
  std::atomic<bool> lost_{false};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace dlock::client
