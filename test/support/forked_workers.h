// Worker processes forked by one parent, for the stress tests, the soak
// and the demo: memory they share with the parent, starting them, pausing
// (SIGSTOP), resuming (SIGCONT), killing and stopping them, and reaping
// them so that none outlives the parent.
//
// Workers are processes, not threads, so that one of them can be killed
// or frozen on its own, as a crashed or paused client would be. Each one
// opens its own database connection after the fork: a libpq connection
// must never be shared between processes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace forked {

// Steady-clock nanoseconds. The clock is system-wide, so a value one
// process writes to shared memory compares with another's.
std::int64_t now_ns();

// Calls done() every `every` until it returns true (then returns true) or
// `within` has passed (then returns false).
template <typename Done>
bool poll_until(std::chrono::milliseconds within,
                std::chrono::milliseconds every, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < give_up) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return false;
}

// An anonymous shared mapping; throws std::system_error if mmap fails.
void* map_shared(std::size_t bytes);
void unmap_shared(void* p, std::size_t bytes) noexcept;

// One T in memory shared with every worker forked after it was made. T
// must hold only what works across processes: plain data and lock-free
// atomics.
template <typename T>
class SharedMemory {
 public:
  SharedMemory() : p_(new (map_shared(sizeof(T))) T()) {}
  ~SharedMemory() {
    p_->~T();
    unmap_shared(p_, sizeof(T));
  }
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  T& operator*() const { return *p_; }
  T* operator->() const { return p_; }

 private:
  T* p_;
};

// In a worker: true once it got SIGTERM, from Workers::stop_all or as its
// parent-death signal; the worker should finish its round and return.
bool stop_requested();

struct Worker {
  pid_t pid = 0;
  bool running = false;  // started and not yet reaped
  bool paused = false;   // stopped with SIGSTOP, not yet resumed
  bool killed = false;   // ended on purpose by Workers::kill
  bool forced = false;   // did not stop when asked and was killed
  int status = 0;        // from waitpid, once reaped

  // It returned from its body by itself, without an exception.
  bool exited_cleanly() const;
};

class Workers {
 public:
  // name(index) names a worker in its error message.
  explicit Workers(std::function<std::string(int index)> name);
  // Whatever happened, no worker outlives this object: the running ones
  // are killed (SIGKILL) and reaped.
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Forks `count` workers (once per Workers). Worker `index`, from 0,
  // runs body(index) and exits 0, or 1 if it throws (the message goes to
  // stderr and error()). parent_death is the signal a worker gets if this
  // process dies: SIGTERM lets it finish its round, SIGKILL ends it at
  // once, paused or not.
  void start(int count, const std::function<void(int index)>& body,
             int parent_death);

  // These act only on a worker not yet reaped: its pid may since have
  // been given to another process.
  // SIGSTOP, and waits until the worker has stopped; false (and the
  // worker reaped) if it ended instead.
  bool pause(int index);
  // SIGCONT, if paused.
  void resume(int index);
  // SIGKILL, and reaps it.
  void kill(int index);
  // Resumes paused workers and asks every worker to stop (SIGTERM); those
  // still running after `allowed` are killed. True if all stopped in time.
  bool stop_all(std::chrono::milliseconds allowed);

  int size() const { return static_cast<int>(workers_.size()); }
  const Worker& operator[](int index) const { return workers_[index]; }
  // Why the worker failed: "<name>: <message>", or "" if it did not.
  const char* error(int index) const;

 private:
  struct ErrorText {
    char text[512];
  };

  [[noreturn]] void run_child(int index, const std::function<void(int)>& body,
                              int parent_death, pid_t parent);
  // SIGKILL and reap, whatever the reason.
  static void end(Worker& w);

  std::function<std::string(int)> name_;
  std::vector<Worker> workers_;
  ErrorText* errors_ = nullptr;  // one per worker, in shared memory
  int started_ = 0;              // how many errors_ there are
};

}  // namespace forked
