// The watchdog's decisions (Watch), on made-up instants: what it sends
// COMMAND's group and when it looks again. Then the watchdog process on a
// real group (a shell in a group of its own), waiting with generous
// deadlines, never betting on timing; dlock run's cases are in
// test/tap/017_dlock_run_watchdog.pl.
#include "watchdog.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

namespace dlock::cli {
namespace {

constexpr std::int64_t kSecond = 1000000000;
constexpr std::int64_t kKillAfter = 2 * kSecond;

TEST(WatchTest, WithoutAGroupItWaitsForAnOrder) {
  Watch w(kKillAfter);
  Watch::Step s = w.step(100 * kSecond);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 0);
  EXPECT_FALSE(w.fired());
}

TEST(WatchTest, BeforeTheDeadlineItWakesAtIt) {
  Watch w(kKillAfter);
  w.take({42, 10 * kSecond});
  Watch::Step s = w.step(9 * kSecond);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 10 * kSecond);
  EXPECT_EQ(w.group(), 42);
  EXPECT_FALSE(w.fired());
}

TEST(WatchTest, AtTheDeadlineSigtermThenSigkillAfterKillAfter) {
  Watch w(kKillAfter);
  w.take({42, 10 * kSecond});
  Watch::Step s = w.step(10 * kSecond);
  EXPECT_EQ(s.signo, SIGTERM);
  EXPECT_TRUE(w.fired());
  s = w.step(10 * kSecond);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 12 * kSecond);
  s = w.step(12 * kSecond - 1);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 12 * kSecond);
  s = w.step(12 * kSecond);
  EXPECT_EQ(s.signo, SIGKILL);
  s = w.step(13 * kSecond);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 0);
}

TEST(WatchTest, WokenPastTheGraceItKillsAtOnce) {
  Watch w(kKillAfter);
  w.take({42, 10 * kSecond});
  Watch::Step s = w.step(12 * kSecond);
  EXPECT_EQ(s.signo, SIGKILL);
  EXPECT_TRUE(w.fired());
  EXPECT_EQ(w.step(20 * kSecond).signo, 0);
}

TEST(WatchTest, ANewerDeadlineMovesItLater) {
  Watch w(kKillAfter);
  w.take({42, 10 * kSecond});
  w.take({42, 15 * kSecond});
  Watch::Step s = w.step(12 * kSecond);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 15 * kSecond);
}

TEST(WatchTest, AnOlderDeadlineNeverMovesItEarlier) {
  Watch w(kKillAfter);
  w.take({42, 10 * kSecond});
  w.take({42, 5 * kSecond});
  Watch::Step s = w.step(6 * kSecond);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 10 * kSecond);
}

TEST(WatchTest, AnotherGroupIsIgnored) {
  Watch w(kKillAfter);
  w.take({42, 10 * kSecond});
  w.take({43, 20 * kSecond});
  EXPECT_EQ(w.group(), 42);
  EXPECT_EQ(w.step(10 * kSecond).signo, SIGTERM);
}

TEST(WatchTest, NoGroupIsNoOrder) {
  Watch w(kKillAfter);
  w.take({0, 10 * kSecond});
  w.take({-1, 10 * kSecond});
  w.take({1, 10 * kSecond});  // kill(-1, ...) would be every process
  EXPECT_EQ(w.group(), 0);
  EXPECT_EQ(w.step(30 * kSecond).signo, 0);
}

// group() is a pid_t: an order's 64-bit group that does not fit one would
// be cut to 1, 0 or -1 there, and kill(-group) reach every process, the
// watchdog's own group or process 1.
TEST(WatchTest, AGroupBeyondAPidIsNoOrder) {
  Watch w(kKillAfter);
  w.take({(std::int64_t{1} << 32) + 1, 10 * kSecond});  // 1 as a pid_t
  w.take({std::int64_t{1} << 32, 10 * kSecond});        // 0
  w.take({(std::int64_t{1} << 32) - 1, 10 * kSecond});  // -1
  EXPECT_EQ(w.group(), 0);
  EXPECT_EQ(w.step(30 * kSecond).signo, 0);
}

TEST(WatchTest, OnceFiredANewDeadlineDoesNotUndoIt) {
  Watch w(kKillAfter);
  w.take({42, 10 * kSecond});
  EXPECT_EQ(w.step(10 * kSecond).signo, SIGTERM);
  w.take({42, 30 * kSecond});
  Watch::Step s = w.step(11 * kSecond);
  EXPECT_EQ(s.signo, 0);
  EXPECT_EQ(s.wake_at, 12 * kSecond);
  EXPECT_EQ(w.step(12 * kSecond).signo, SIGKILL);
}

// A shell in a process group of its own, running `script`.
pid_t start_group(const char* script) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Its wait() status once it has ended (30 s at most), or nullopt.
std::optional<int> ended(pid_t pid) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return std::nullopt;
}

// failure() once it says something (30 s at most), or nullopt.
std::optional<std::string> failure_of(Watchdog& w) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    if (auto why = w.failure()) return why;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::nullopt;
}

client::TimePoint in(std::chrono::milliseconds d) {
  return client::BootClock::now() + d;
}

TEST(WatchdogTest, AtTheDeadlineTheGroupGetsSigterm) {
  Watchdog w(std::chrono::seconds(10));
  pid_t group = start_group("sleep 60");
  w.watch(group, in(std::chrono::milliseconds(100)));
  std::optional<int> status = ended(group);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGTERM);
  EXPECT_EQ(failure_of(w),
            "the local deadline passed: its watchdog stopped COMMAND");
  EXPECT_TRUE(w.fired());
}

// COMMAND itself may leave its group (setpgid into another group of the
// session, here the test's): the watchdog still stops it, dlock's child.
// Left to itself it would exit 0 after 5 s.
TEST(WatchdogTest, AtTheDeadlineCommandThatLeftItsGroupGetsSigterm) {
  Watchdog w(std::chrono::seconds(10));
  pid_t group = start_group(
      "exec perl -MPOSIX -e "
      "'setpgid(0, getpgrp(getppid())) or exit 9; sleep 5'");
  w.watch(group, in(std::chrono::milliseconds(500)));
  std::optional<int> status = ended(group);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGTERM);
}

TEST(WatchdogTest, SigkillAfterKillAfterWhenSigtermIsIgnored) {
  Watchdog w(std::chrono::milliseconds(200));
  pid_t group = start_group("trap '' TERM; sleep 60 & wait; wait");
  w.watch(group, in(std::chrono::milliseconds(100)));
  std::optional<int> status = ended(group);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
}

// True once process `pid` is stopped (30 s at most).
bool stopped(pid_t pid) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream stat(path);
    std::string line;
    std::getline(stat, line);
    std::size_t end = line.rfind(')');
    if (end != std::string::npos && end + 2 < line.size() &&
        line[end + 2] == 'T') {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(WatchdogTest, ANewerDeadlineKeepsTheGroupAlive) {
  Watchdog w(std::chrono::seconds(10));
  pid_t group = start_group("sleep 60");
  // Both orders wait in its socket while it is stopped, and it reads all
  // that waits before it acts: the passed deadline is never acted on.
  kill(w.pid(), SIGSTOP);
  ASSERT_TRUE(stopped(w.pid()));
  w.watch(group, in(std::chrono::milliseconds(-1000)));
  w.watch(group, in(std::chrono::seconds(60)));
  kill(w.pid(), SIGCONT);
  // Acting on the passed deadline would be at once; a slow watchdog can
  // only make this pass, never fail.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(w.failure(), std::nullopt);
  int status = 0;
  EXPECT_EQ(waitpid(group, &status, WNOHANG), 0);
  kill(-group, SIGKILL);
  waitpid(group, nullptr, 0);
}

TEST(WatchdogTest, ItsEndIsSaid) {
  Watchdog w(std::chrono::seconds(1));
  EXPECT_EQ(w.failure(), std::nullopt);
  kill(w.pid(), SIGKILL);
  EXPECT_EQ(failure_of(w), "its watchdog was killed by signal 9");
  EXPECT_FALSE(w.fired());
}

TEST(WatchdogTest, ItLeadsASessionOfItsOwn) {
  Watchdog w(std::chrono::seconds(1));
  EXPECT_EQ(getsid(w.pid()), w.pid());
  EXPECT_EQ(getpgid(w.pid()), w.pid());
}

}  // namespace
}  // namespace dlock::cli
