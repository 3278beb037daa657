// Signals as bytes on a pipe (the self-pipe trick): the handler only writes
// the signal's number, and the main loop, which polls fd(), acts on what
// take() returns. One SignalPipe at a time in a process.
#pragma once

#include <csignal>
#include <initializer_list>
#include <vector>

namespace dlock::cli {

class SignalPipe {
 public:
  // Catches `signals`, except those the process was started with ignored
  // (nohup's SIGHUP): they stay ignored, for COMMAND too.
  explicit SignalPipe(std::initializer_list<int> signals);
  // Puts the dispositions back and closes the pipe.
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Readable when a caught signal waits to be taken.
  int fd() const { return read_fd_; }
  // The signals caught since the last call, in arrival order.
  std::vector<int> take();
  // The caught signals: blocked around fork(), reset in the child.
  const sigset_t& caught() const { return caught_; }
  // In a forked child before exec: the caught signals' dispositions as
  // they were before. Async-signal-safe.
  void reset_in_child() const noexcept;

 private:
  struct Saved {
    int signo;
    struct sigaction action;
  };

  int read_fd_ = -1;
  int write_fd_ = -1;
  sigset_t caught_;
  std::vector<Saved> saved_;
};

}  // namespace dlock::cli
