// The director: the demo's parent process. It starts the workers, plays
// the scenes (scenes.cpp) against whichever worker holds the lease, stops
// the workers and prints the report and the checks (report.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "demo.h"
#include "forked_workers.h"
#include <dlock/pq.h>
#include "report.h"

namespace demo {

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
  std::chrono::milliseconds at;  // earliest start, from the run's beginning
  bool (Director::*play)(const Holder&);
  void (Director::*after_takeover)(const Holder&);
};

class Director {
 public:
  using Clock = std::chrono::steady_clock;

  // t0: the server clock at the start; printed times are relative to it.
  Director(Shared& shared, std::string t0);
  Director(const Director&) = delete;
  Director& operator=(const Director&) = delete;

  // Runs the whole demo; the exit code: 0 if every check passed.
  int run();

 private:
  // scenes.cpp: the scenes, in the order they are played.
  std::vector<Scene> scenes() const;
  bool kill_holder(const Holder& victim);
  bool pause_holder(const Holder& victim);
  void resume_paused_holder(const Holder& victim);

  void start_workers();
  void stop_workers();
  bool find_fresh_holder(Holder& out, std::chrono::milliseconds give_up_after);
  void wait_for_backend_exit(int worker);
  void wait_for_takeover(const Holder& victim);
  // The lease's expires_at if it is still held with `token`, else nullopt.
  std::optional<std::string> held_until(std::int64_t token);
  // The harness counts workers from 0, the demo from 1.
  const forked::Worker& worker(int id) const { return workers_[id - 1]; }

  // A live message, stamped with the seconds since the run began.
  void say(const std::string& what) const;
  // A server timestamp as seconds after t0, e.g. "+6.613 s".
  std::string offset(const std::string& ts);

  Shared& shared_;
  std::string t0_;
  Clock::time_point began_;
  // If the director fails midway, no worker outlives it.
  forked::Workers workers_{[](int index) { return worker_name(index + 1); }};
  std::optional<dlock::pq::Connection> db_;
  RunNotes notes_;
  Clock::time_point paused_at_;  // when the pause scene sent SIGSTOP
};

}  // namespace demo
