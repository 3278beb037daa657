#include "signal_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace dlock::cli {

namespace {

volatile sig_atomic_t g_write_fd = -1;

extern "C" void on_signal(int signo) {
  int saved_errno = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  // Non-blocking: with the pipe full, the signal is already waiting.
  ssize_t ignored = write(g_write_fd, &byte, 1);
  (void)ignored;
  errno = saved_errno;
}

}  // namespace

SignalPipe::SignalPipe(std::initializer_list<int> signals) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  g_write_fd = write_fd_;
  sigemptyset(&caught_);
  for (int signo : signals) {
    struct sigaction previous {};
    sigaction(signo, nullptr, &previous);
    if (previous.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(signo, &action, nullptr);
    sigaddset(&caught_, signo);
    saved_.push_back({signo, previous});
  }
}

SignalPipe::~SignalPipe() {
  for (const Saved& s : saved_) sigaction(s.signo, &s.action, nullptr);
  g_write_fd = -1;
  close(read_fd_);
  close(write_fd_);
}

std::vector<int> SignalPipe::take() {
  std::vector<int> signals;
  unsigned char buffer[64];
  ssize_t n;
  while ((n = read(read_fd_, buffer, sizeof buffer)) > 0 ||
         (n < 0 && errno == EINTR)) {
    for (ssize_t i = 0; i < n; ++i) signals.push_back(buffer[i]);
  }
  return signals;
}

void SignalPipe::reset_in_child() const noexcept {
  for (const Saved& s : saved_) sigaction(s.signo, &s.action, nullptr);
}

}  // namespace dlock::cli
