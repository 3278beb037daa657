// COMMAND as dlock run starts and watches it: in a process group of its
// own (so that it is signalled and killed as a group), with the lease in
// its environment, and with the terminal when dlock has it. COMMAND itself
// (not what it starts) gets SIGKILL when dlock dies, even by SIGKILL
// (PR_SET_PDEATHSIG): without dlock nothing would stop it when the lease
// ends. Linux sends it when the thread that called spawn() ends, so call
// it from the main thread.
//
// With a Watchdog (watchdog.h), the child's group is handed to it before
// COMMAND is exec'd, and the watchdog is stopped before the child is
// reaped, while the group's id cannot be reused. It kills the whole group
// when dlock dies, and at the local deadline while dlock is stopped.
//
// wait() is dlock run's main loop: poll() on the signal pipe with a 20 ms
// timeout, forwarding each signal to the group, asking lost() and reaping
// the child without blocking. Once lost() says so, the group gets SIGTERM,
// and SIGKILL after the grace; when the child has ended, whatever is left
// of its group is killed at once. When the child ends on its own, what is
// left of its group (background processes) gets the same, SIGTERM then
// SIGKILL after the grace, and wait() returns once no process is left in
// the group, so that the lease is released only then.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "signal_pipe.h"
#include "watchdog.h"

namespace dlock::cli {

// The exit code a shell reports for a wait() status: the exit status, or
// 128 + N for a process that signal N killed.
int exit_code_of(int wait_status);

// True when stdin is a terminal and this process is in its foreground.
bool in_terminal_foreground();

// What to start.
struct Command {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  // Set in its environment, replacing variables of the same names.
  std::vector<std::pair<std::string, std::string>> env;
  // Hand it the terminal on stdin (when in_terminal_foreground()).
  bool take_terminal = false;
};

// A command that could not be run: 127 when it was not found, else 126.
struct SpawnFailure {
  int exit_code;
  std::string message;  // "COMMAND: No such file or directory"
};

// How the child ended.
struct Ending {
  int exit_code;                    // exit_code_of() its status
  bool lost_while_running = false;  // lost() said so while it ran
};

class Child {
 public:
  // Starts the command; with a watchdog, only once it watches the group
  // until `deadline`. Throws std::system_error when fork() or pipe() fail,
  // or the watchdog is gone.
  static std::variant<Child, SpawnFailure> spawn(
      const Command& command, const SignalPipe& signals,
      Watchdog* watchdog = nullptr, client::TimePoint deadline = {});

  // Kills the group and reaps the child if wait() was never called.
  ~Child();
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // Waits until the child ends and its group is empty (see above);
  // kill_after is the grace between SIGTERM and SIGKILL. Gives the
  // terminal back, if it had it.
  Ending wait(SignalPipe& signals, const std::function<bool()>& lost,
              std::chrono::milliseconds kill_after);

 private:
  Child(pid_t pid, bool terminal, Watchdog* watchdog)
      : pid_(pid), terminal_(terminal), watchdog_(watchdog) {}

  // The child ended: stops the watchdog, reaps the child and returns its
  // status.
  int reap();
  // The child stopped (^Z): stops dlock too, as a shell's job, and
  // resumes the child when dlock is resumed.
  void follow_stop();
  // Sends signo to the child's group, and to the child itself if it has
  // left the group (setpgid): unreaped, its pid is still its own.
  void signal_group(int signo);

  pid_t pid_ = -1;  // -1 once reaped
  bool terminal_ = false;
  Watchdog* watchdog_ = nullptr;
};

}  // namespace dlock::cli
