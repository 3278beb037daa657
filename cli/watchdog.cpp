#include "watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <limits>
#include <system_error>

namespace dlock::cli {

namespace {

// What the watchdog sends dlock.
constexpr char kReady = 'R';  // set up: dlock may start COMMAND
constexpr char kFired = 'F';  // the deadline passed: the group was signalled

// The watchdog's end of the socket, once the others are closed.
constexpr int kSocketFd = 3;

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::int64_t boottime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void send_byte(int fd, char byte) {
  ssize_t ignored = send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)ignored;
}

// Sends signo to COMMAND's group, and to COMMAND itself if it has left the
// group (setpgid): dlock stops the watchdog before it reaps COMMAND, so
// its pid is still its own.
void signal_group(pid_t group, int signo) {
  kill(-group, signo);
  if (getpgid(group) != group) kill(group, signo);
}

// The forked watchdog. Async-signal-safe calls only.
[[noreturn]] void watchdog_main(int fd, std::int64_t kill_after_ns) {
  prctl(PR_SET_NAME, "dlock watchdog");
  setsid();
  // Terminal and dlock's signals end it as they would any process (dlock
  // then takes the lease as lost); a closed stderr must not.
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP}) {
    signal(signo, SIG_DFL);
  }
  signal(SIGPIPE, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Only the socket stays open: no connection of dlock's, and no pipe
  // that someone reads until its writers are gone.
  if (fd != kSocketFd && dup2(fd, kSocketFd) < 0) _exit(1);
  if (close_range(kSocketFd + 1, ~0U, 0) != 0) {
    // A kernel before 5.9: one by one, up to the limit on descriptors.
    rlimit limit{};
    int most = getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
                       limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < 65536
                   ? static_cast<int>(limit.rlim_cur)
                   : 65536;
    for (int open_fd = kSocketFd + 1; open_fd < most; ++open_fd) close(open_fd);
  }
  int null = open("/dev/null", O_RDWR);
  if (null < 0) _exit(1);
  for (int std_fd = 0; std_fd < 3; ++std_fd) dup2(null, std_fd);
  if (null > 2) close(null);
  int timer = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
  if (timer < 0) _exit(1);
  send_byte(kSocketFd, kReady);

  Watch watch(kill_after_ns);
  bool told = false;
  for (;;) {
    Watch::Step step = watch.step(boottime_ns());
    if (step.signo != 0) {
      signal_group(watch.group(), step.signo);
      // A stopped process would not see SIGTERM.
      if (step.signo == SIGTERM) signal_group(watch.group(), SIGCONT);
      if (!told) send_byte(kSocketFd, kFired);
      told = true;
      continue;
    }
    itimerspec at{};
    at.it_value.tv_sec = static_cast<time_t>(step.wake_at / 1000000000);
    at.it_value.tv_nsec = static_cast<long>(step.wake_at % 1000000000);
    timerfd_settime(timer, TFD_TIMER_ABSTIME, &at, nullptr);
    pollfd fds[2] = {{kSocketFd, POLLIN, 0}, {timer, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;  // EINTR: look again
    if (fds[1].revents != 0) {
      std::uint64_t expirations;
      ssize_t ignored = read(timer, &expirations, sizeof expirations);
      (void)ignored;
    }
    if (fds[0].revents == 0) continue;
    for (;;) {
      Order order;
      ssize_t n = recv(kSocketFd, &order, sizeof order, MSG_DONTWAIT);
      if (n == static_cast<ssize_t>(sizeof order)) {
        watch.take(order);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      if (n > 0) continue;  // not an order: never sent
      // dlock is gone: nothing holds the lease for COMMAND any more.
      if (watch.group() > 0) kill(-watch.group(), SIGKILL);
      _exit(0);
    }
  }
}

}  // namespace

void Watch::take(const Order& o) {
  // kill(-1) would signal every process: a group is a child's pid, never 1,
  // and fits a pid_t (group() would cut a larger one to 1, 0 or -1).
  if (fired() || o.group <= 1 || o.group > std::numeric_limits<pid_t>::max()) {
    return;
  }
  if (group_ == 0) {
    group_ = o.group;
    deadline_ns_ = o.deadline_ns;
  }
  if (o.group != group_) return;
  if (o.deadline_ns > deadline_ns_) deadline_ns_ = o.deadline_ns;
}

Watch::Step Watch::step(std::int64_t now) {
  if (group_ == 0) return {};
  std::int64_t kill_at = deadline_ns_ + kill_after_ns_;
  switch (stage_) {
    case Stage::watching:
      if (now >= kill_at) {
        // Woken past the grace too (the machine was paused): no time left.
        stage_ = Stage::killed;
        return {SIGKILL, 0};
      }
      if (now >= deadline_ns_) {
        stage_ = Stage::terminated;
        return {SIGTERM, 0};
      }
      return {0, deadline_ns_};
    case Stage::terminated:
      if (now >= kill_at) {
        stage_ = Stage::killed;
        return {SIGKILL, 0};
      }
      return {0, kill_at};
    case Stage::killed:
      break;
  }
  return {};
}

void reap_children_ourselves() {
  struct sigaction current {};
  sigaction(SIGCHLD, nullptr, &current);
  if (current.sa_handler == SIG_IGN) signal(SIGCHLD, SIG_DFL);
}

Watchdog::Watchdog(std::chrono::milliseconds kill_after) {
  reap_children_ourselves();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    fail("socketpair");
  }
  std::int64_t kill_after_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(kill_after).count();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    watchdog_main(fds[1], kill_after_ns);
  }
  int fork_errno = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    errno = fork_errno;
    fail("fork");
  }
  pid_ = pid;
  fd_ = fds[0];
  char byte = 0;
  ssize_t n;
  do {
    n = recv(fd_, &byte, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || byte != kReady) {
    stop();
    errno = ECHILD;
    fail("the watchdog did not start");
  }
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::watch(pid_t group, client::TimePoint deadline) {
  Order order{group, std::chrono::duration_cast<std::chrono::nanoseconds>(
                         deadline.time_since_epoch())
                         .count()};
  if (fd_ < 0 ||
      (order.group == sent_.group && order.deadline_ns == sent_.deadline_ns)) {
    return;
  }
  if (send(fd_, &order, sizeof order, MSG_NOSIGNAL | MSG_DONTWAIT) ==
      static_cast<ssize_t>(sizeof order)) {
    sent_ = order;
  }
}

std::optional<std::string> Watchdog::failure() {
  while (!ended_ && fd_ >= 0) {
    char byte;
    ssize_t n = recv(fd_, &byte, 1, MSG_DONTWAIT);
    if (n == 1) {
      if (byte == kFired) fired_ = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    // Its socket ends only when it exits: it can be reaped now.
    int status = 0;
    pid_t reaped;
    do {
      reaped = waitpid(pid_, &status, 0);
    } while (reaped < 0 && errno == EINTR);
    pid_ = -1;
    if (reaped > 0 && WIFSIGNALED(status)) {
      ended_ = "its watchdog was killed by signal " +
               std::to_string(WTERMSIG(status));
    } else if (reaped > 0 && WIFEXITED(status)) {
      ended_ = "its watchdog exited with status " +
               std::to_string(WEXITSTATUS(status));
    } else {
      ended_ = "its watchdog ended";
    }
  }
  if (fired_) {
    return "the local deadline passed: its watchdog stopped COMMAND";
  }
  return ended_;
}

void Watchdog::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace dlock::cli
