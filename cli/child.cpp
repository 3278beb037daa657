#include "child.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace dlock::cli {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPollInterval{20};

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// Hands the terminal on stdin to process group `pgid`. SIGTTOU is blocked
// meanwhile: a background group may then take the terminal too.
void give_terminal(pid_t pgid) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, pgid);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Where execvp() would look for `name`, in order.
std::vector<std::string> executable_paths(const std::string& name) {
  if (name.find('/') != std::string::npos) return {name};
  if (name.empty()) return {};
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/bin:/usr/bin";
  std::vector<std::string> paths;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end - start);
    paths.push_back((dir.empty() ? "." : dir) + "/" + name);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return paths;
}

// This process's environment with `extra` set.
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [n, v] : extra) replaced = replaced || n == name;
    if (!replaced) env.push_back(std::move(entry));
  }
  for (const auto& [n, v] : extra) env.push_back(n + "=" + v);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Reads exactly one int, or nothing (end of file).
bool read_int(int fd, int& value) {
  ssize_t n;
  do {
    n = read(fd, &value, sizeof value);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof value);
}

// The forked child: death with dlock, its own group, the parent's
// go-ahead, then exec. Async-signal-safe calls only (the parent may have
// other threads).
[[noreturn]] void exec_child(pid_t dlock_pid, const SignalPipe& signals,
                             const sigset_t& mask, int go_fd, int report_fd,
                             const std::vector<char*>& paths, char** argv,
                             char** envp) {
  // SIGKILL when the thread that forked this child, dlock's, ends. If it
  // ended before this call, the child has a new parent already and the
  // signal would never come: end now.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != dlock_pid) _exit(127);
  signals.reset_in_child();
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  setpgid(0, 0);
  char byte;
  while (read(go_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  int error = ENOENT;
  bool denied = false;
  for (char* path : paths) {
    if (!path) break;
    execve(path, argv, envp);
    if (errno == EACCES) {
      denied = true;
    } else if (errno != ENOENT && errno != ENOTDIR) {
      error = errno;
      break;
    }
  }
  if (error == ENOENT && denied) error = EACCES;
  ssize_t ignored = write(report_fd, &error, sizeof error);
  (void)ignored;
  _exit(127);
}

// True when process `pid` is in process group `pgid` and not a zombie.
bool lives_in_group(const char* pid, pid_t pgid) {
  std::string path = std::string("/proc/") + pid + "/stat";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // gone meanwhile
  char stat[512];
  ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  if (n <= 0) return false;
  stat[n] = '\0';
  // "pid (comm) state ppid pgrp ...", where comm may hold ')' too.
  const char* comm_end = std::strrchr(stat, ')');
  char state = 0;
  int ppid = 0;
  int pgrp = 0;
  if (!comm_end ||
      std::sscanf(comm_end + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) {
    return false;
  }
  return pgrp == pgid && state != 'Z' && state != 'X';
}

// Whether a process that is not a zombie is in process group `pgid`, from
// /proc: kill(-pgid, 0) would count zombies too, and the group's leader is
// one until it is reaped. nullopt when /proc cannot be read.
std::optional<bool> group_lives(pid_t pgid) {
  DIR* proc = opendir("/proc");
  if (!proc) return std::nullopt;
  bool found = false;
  while (dirent* entry = readdir(proc)) {
    const char* name = entry->d_name;
    if (name[0] < '1' || name[0] > '9') continue;  // not a process
    if (lives_in_group(name, pgid)) {
      found = true;
      break;
    }
  }
  closedir(proc);
  return found;
}

}  // namespace

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 128;
}

bool in_terminal_foreground() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

std::variant<Child, SpawnFailure> Child::spawn(const Command& command,
                                               const SignalPipe& signals,
                                               Watchdog* watchdog,
                                               client::TimePoint deadline) {
  reap_children_ourselves();
  // Everything the child needs is built before fork().
  std::vector<std::string> path_strings =
      executable_paths(command.argv.empty() ? "" : command.argv[0]);
  std::vector<char*> paths = c_strings(path_strings);
  std::vector<std::string> arg_strings = command.argv;
  std::vector<char*> argv = c_strings(arg_strings);
  std::vector<std::string> env_strings = environment_with(command.env);
  std::vector<char*> envp = c_strings(env_strings);

  int go[2];      // closed by the parent once the group is set up
  int report[2];  // the child's errno when exec fails
  if (pipe2(go, O_CLOEXEC) != 0) fail("pipe2");
  if (pipe2(report, O_CLOEXEC) != 0) {
    int saved = errno;
    close(go[0]);
    close(go[1]);
    errno = saved;
    fail("pipe2");
  }
  // A signal caught between fork() and the child's reset would run dlock's
  // handler in the child: hold them until then.
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &signals.caught(), &old_mask);
  pid_t dlock_pid = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    close(report[0]);
    exec_child(dlock_pid, signals, old_mask, go[0], report[1], paths,
               argv.data(), envp.data());
  }
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  close(go[0]);
  close(report[1]);
  if (pid < 0) {
    close(go[1]);
    close(report[0]);
    errno = fork_errno;
    fail("fork");
  }
  // The child does the same: whichever runs first makes the group.
  setpgid(pid, pid);
  if (command.take_terminal) give_terminal(pid);
  Child child(pid, command.take_terminal, watchdog);
  if (watchdog) {
    watchdog->watch(pid, deadline);
    std::optional<std::string> why = watchdog->failure();
    if (why && !watchdog->fired()) {
      // COMMAND never runs unwatched: the child dies before exec. (A
      // watchdog that fired already is a lost lease, which wait() sees.)
      close(go[1]);
      close(report[0]);
      kill(pid, SIGKILL);
      child.reap();
      throw std::runtime_error("could not start COMMAND: " + *why);
    }
  }
  close(go[1]);
  int error = 0;
  bool exec_failed = read_int(report[0], error);
  close(report[0]);
  if (!exec_failed) return child;
  child.reap();
  return SpawnFailure{error == ENOENT || error == ENOTDIR ? 127 : 126,
                      (command.argv.empty() ? "" : command.argv[0]) + ": " +
                          std::strerror(error)};
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      terminal_(other.terminal_),
      watchdog_(std::exchange(other.watchdog_, nullptr)) {}

Child::~Child() {
  if (pid_ < 0) return;
  signal_group(SIGKILL);
  reap();
}

int Child::reap() {
  if (watchdog_) watchdog_->stop();
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (terminal_) give_terminal(getpgrp());
  return status;
}

void Child::signal_group(int signo) {
  kill(-pid_, signo);
  if (getpgid(pid_) != pid_) kill(pid_, signo);
}

void Child::follow_stop() {
  give_terminal(getpgrp());
  raise(SIGTSTP);
  // Resumed (or not stopped at all, in an orphaned process group).
  give_terminal(pid_);
  kill(-pid_, SIGCONT);
}

Ending Child::wait(SignalPipe& signals, const std::function<bool()>& lost,
                   milliseconds kill_after) {
  bool losing = false;
  // The child has exited. It is reaped only at the end, so that its id,
  // its group's, cannot be reused while the group is being emptied.
  bool exited = false;
  std::optional<Clock::time_point> kill_at;  // set once SIGTERM is sent
  bool killed = false;
  auto terminate = [&] {
    signal_group(SIGTERM);
    signal_group(SIGCONT);  // a stopped process would not see SIGTERM
    kill_at = Clock::now() + kill_after;
  };
  for (;;) {
    if (!exited) {
      siginfo_t info{};
      int options = WEXITED | WNOHANG | WNOWAIT | (terminal_ ? WSTOPPED : 0);
      if (waitid(P_PID, static_cast<id_t>(pid_), &info, options) != 0 &&
          errno != EINTR) {
        fail("waitid");
      }
      if (info.si_pid == pid_ && info.si_code == CLD_STOPPED) {
        waitpid(pid_, nullptr, WUNTRACED | WNOHANG);  // consume the stop
        follow_stop();
        continue;
      }
      exited = info.si_pid == pid_;
    }
    // A child that a watchdog killed ended because the lease was lost:
    // ask before taking its end for its own.
    if (exited && !losing && lost()) losing = true;
    if (exited) {
      if (losing) {
        kill(-pid_, SIGKILL);
        return Ending{exit_code_of(reap()), true};
      }
      // What is left of the group ends before wait() returns: SIGTERM,
      // SIGKILL after the grace. Without /proc to tell, the group is taken
      // to live until it has had SIGKILL.
      if (!group_lives(pid_).value_or(!killed)) {
        return Ending{exit_code_of(reap()), false};
      }
      if (!kill_at) terminate();
    }
    if (!losing && lost()) {
      losing = true;
      if (exited) continue;  // what is left gets SIGKILL at once
      terminate();
    }
    milliseconds timeout = kPollInterval;
    if (kill_at && !killed) {
      Clock::time_point now = Clock::now();
      if (now >= *kill_at) {
        signal_group(SIGKILL);
        killed = true;
      } else {
        timeout =
            std::min(timeout, std::chrono::ceil<milliseconds>(*kill_at - now));
      }
    }
    pollfd p{signals.fd(), POLLIN, 0};
    poll(&p, 1, static_cast<int>(timeout.count()));
    for (int signo : signals.take()) signal_group(signo);
  }
}

}  // namespace dlock::cli
