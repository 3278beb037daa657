// Real children: sh scripts started by Child, ended by their own exit, by
// a signal, or by the loss of the lease (a lost() the test controls). No
// assertion bets on timing: the tests wait for files the scripts write,
// polling with generous deadlines.
#include "child.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "signal_pipe.h"

namespace dlock::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr seconds kPatience{30};  // far beyond what any step needs

// A directory of its own for each test, removed at its end.
class ChildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "dlock-child-test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const {
    return (dir_ / name).string();
  }

  fs::path dir_;
};

// sh -c script, with $0 the test's directory.
Command sh(const std::string& script, const fs::path& dir = ".") {
  Command c;
  c.argv = {"sh", "-c", script, dir.string()};
  return c;
}

// Polls until done() or kPatience has passed; false then.
template <typename F>
bool eventually(F done) {
  Clock::time_point give_up = Clock::now() + kPatience;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// True when process pid has ended (gone, or a zombie nobody reaped).
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  std::size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         line[close + 2] == 'Z';
}

pid_t read_pid(const std::string& path) {
  std::ifstream f(path);
  pid_t pid = 0;
  f >> pid;
  return pid;
}

// A lost() that never says so, but fails the test (and ends the child as
// if lost) when the child runs past kPatience.
std::function<bool()> never_lost() {
  Clock::time_point give_up = Clock::now() + kPatience;
  return [give_up] {
    if (Clock::now() < give_up) return false;
    ADD_FAILURE() << "the child ran past the test's patience";
    return true;
  };
}

Child started(std::variant<Child, SpawnFailure> spawned) {
  if (auto* failure = std::get_if<SpawnFailure>(&spawned)) {
    ADD_FAILURE() << "spawn failed: " << failure->message;
    std::abort();
  }
  return std::move(std::get<Child>(spawned));
}

Ending run(const Command& command) {
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(command, signals));
  return child.wait(signals, never_lost(), seconds(5));
}

// Waits for the child, sending dlock (this process) signo once the file
// `ready` exists.
Ending wait_signalling(Child& child, SignalPipe& signals,
                       const std::string& ready, int signo) {
  bool sent = false;
  std::function<bool()> patience = never_lost();
  Ending e = child.wait(
      signals,
      [&] {
        if (!sent && fs::exists(ready)) {
          sent = true;
          kill(getpid(), signo);  // to dlock: forwarded to the group
        }
        return patience();
      },
      seconds(5));
  EXPECT_TRUE(sent);
  return e;
}

SpawnFailure failure_of(const Command& command) {
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  std::variant<Child, SpawnFailure> spawned = Child::spawn(command, signals);
  if (auto* failure = std::get_if<SpawnFailure>(&spawned)) return *failure;
  ADD_FAILURE() << "the command started";
  std::get<Child>(spawned).wait(
      signals, [] { return true; }, seconds(0));
  return {};
}

TEST_F(ChildTest, ExitStatusPassesThrough) {
  EXPECT_EQ(run(sh("exit 0")).exit_code, 0);
  EXPECT_EQ(run(sh("exit 3")).exit_code, 3);
  EXPECT_EQ(run(sh("exit 255")).exit_code, 255);
  EXPECT_FALSE(run(sh("exit 3")).lost_while_running);
}

TEST_F(ChildTest, KilledBySignalNIs128PlusN) {
  EXPECT_EQ(run(sh("kill -USR1 $$")).exit_code, 128 + SIGUSR1);
  EXPECT_EQ(run(sh("kill -KILL $$")).exit_code, 128 + SIGKILL);
}

// Started with SIGCHLD ignored (a parent's SIG_IGN survives exec), the
// kernel would reap the child at its end: its status lost, and its pid,
// the group's id, free for reuse while dlock still signals it.
TEST_F(ChildTest, ExitStatusPassesThroughWithSigchldIgnored) {
  struct sigaction ignore = {};
  struct sigaction previous = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGCHLD, &ignore, &previous);
  Ending e{};
  EXPECT_NO_THROW(e = run(sh("exit 3")));
  sigaction(SIGCHLD, &previous, nullptr);
  EXPECT_EQ(e.exit_code, 3);
}

// COMMAND itself may leave its group (setpgid into another group of the
// session, here the test's): a lost lease still stops it, as it is still
// dlock's child. Left to itself it would exit 0 after 5 s.
TEST_F(ChildTest, ALostLeaseStopsCommandThatLeftItsGroup) {
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  std::string moved = path("moved");
  Child child = started(Child::spawn(
      {{"perl", "-MPOSIX", "-e",
        "setpgid(0, getpgrp(getppid())) or exit 9; open(my $f, '>', '" + moved +
            "'); close $f; sleep 5"},
       {},
       false},
      signals));
  Ending e = child.wait(
      signals, [&] { return fs::exists(moved); }, seconds(1));
  EXPECT_TRUE(e.lost_while_running);
  EXPECT_EQ(e.exit_code, 128 + SIGTERM);
}

TEST_F(ChildTest, ExitCodeOfWaitStatuses) {
  EXPECT_EQ(exit_code_of(3 << 8), 3);
  EXPECT_EQ(exit_code_of(SIGTERM), 128 + SIGTERM);
}

TEST_F(ChildTest, NotFoundIs127) {
  // A PATH of searchable directories only: a directory the user may not
  // search (root's, under runuser) makes the answer EACCES, 126, as in a
  // shell.
  std::string old_path = std::getenv("PATH");
  setenv("PATH", (dir_.string() + ":/usr/bin:/bin").c_str(), 1);
  Command missing;
  missing.argv = {"dlock-test-no-such-command", "x"};
  SpawnFailure f = failure_of(missing);
  setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(f.exit_code, 127);
  EXPECT_EQ(f.message, "dlock-test-no-such-command: No such file or directory");

  Command missing_path;
  missing_path.argv = {path("nothing-here")};
  f = failure_of(missing_path);
  EXPECT_EQ(f.exit_code, 127);
  EXPECT_EQ(f.message, path("nothing-here") + ": No such file or directory");
}

TEST_F(ChildTest, NotExecutableIs126) {
  std::string script = path("not-executable");
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  ASSERT_EQ(chmod(script.c_str(), 0644), 0);
  Command c;
  c.argv = {script};
  SpawnFailure f = failure_of(c);
  EXPECT_EQ(f.exit_code, 126);
  EXPECT_EQ(f.message, script + ": Permission denied");

  Command directory;
  directory.argv = {dir_.string()};
  EXPECT_EQ(failure_of(directory).exit_code, 126);
}

TEST_F(ChildTest, FoundInPath) {
  std::string bin = path("bin");
  fs::create_directory(bin);
  std::ofstream(bin + "/dlock-test-tool") << "#!/bin/sh\nexit 42\n";
  ASSERT_EQ(chmod((bin + "/dlock-test-tool").c_str(), 0755), 0);
  std::string old_path = std::getenv("PATH");
  setenv("PATH", (bin + ":" + old_path).c_str(), 1);
  Command c;
  c.argv = {"dlock-test-tool"};
  int code = run(c).exit_code;
  setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(code, 42);
}

TEST_F(ChildTest, EnvironmentAddsAndReplaces) {
  setenv("DLOCK_NAME", "stale", 1);
  setenv("DLOCK_TEST_KEPT", "kept", 1);
  Command c =
      sh("[ \"$DLOCK_NAME\" = nightly-report ] || exit 1; "
         "[ \"$DLOCK_TOKEN\" = 42 ] || exit 2; "
         "[ \"$DLOCK_TEST_KEPT\" = kept ] || exit 3; "
         "[ \"$(env | grep -c '^DLOCK_NAME=')\" = 1 ] || exit 4");
  c.env = {{"DLOCK_NAME", "nightly-report"}, {"DLOCK_TOKEN", "42"}};
  int code = run(c).exit_code;
  unsetenv("DLOCK_NAME");
  unsetenv("DLOCK_TEST_KEPT");
  EXPECT_EQ(code, 0);
}

TEST_F(ChildTest, OwnProcessGroupAndCleanSignals) {
  // The caught signals are back to their default action in COMMAND and not
  // blocked; a signal ignored when dlock started stays ignored (nohup).
  struct sigaction ignore = {};
  struct sigaction previous = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGHUP, &ignore, &previous);
  {
    SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
    EXPECT_EQ(sigismember(&signals.caught(), SIGHUP), 0);
    EXPECT_EQ(sigismember(&signals.caught(), SIGTERM), 1);
    Command c =
        sh("[ \"$(cut -d' ' -f5 /proc/$$/stat)\" = $$ ] || exit 1; "
           "ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status); "
           "blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' /proc/$$/status); "
           "[ $(( 0x$ign & 1 )) = 1 ] || exit 2; "       // SIGHUP ignored
           "[ $(( 0x$ign & 0x4002 )) = 0 ] || exit 3; "  // SIGINT, SIGTERM not
           "[ $(( 0x$blk & 0x4003 )) = 0 ] || exit 4");
    Child child = started(Child::spawn(c, signals));
    EXPECT_EQ(getpgid(child.pid()), child.pid());
    EXPECT_EQ(child.wait(signals, never_lost(), seconds(5)).exit_code, 0);
  }
  sigaction(SIGHUP, &previous, nullptr);
}

TEST_F(ChildTest, SignalsGoToTheWholeGroup) {
  std::string ready = path("ready");
  std::string background = path("background.pid");
  // sh waits for a background sleep; SIGTERM to the group ends both.
  Command c =
      sh("sleep 60 & echo $! > \"$0/background.pid\"; "
         "touch \"$0/ready\"; wait",
         dir_);
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(c, signals));
  Ending e = wait_signalling(child, signals, ready, SIGTERM);
  EXPECT_EQ(e.exit_code, 128 + SIGTERM);
  EXPECT_FALSE(e.lost_while_running);
  pid_t sleeper = read_pid(background);
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(eventually([&] { return ended(sleeper); }));
}

TEST_F(ChildTest, EachSignalIsForwarded) {
  for (int signo : {SIGINT, SIGHUP}) {
    std::string ready = path("ready" + std::to_string(signo));
    Command c = sh("touch \"$0\"; exec sleep 60", ready);
    SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
    Child child = started(Child::spawn(c, signals));
    Ending e = wait_signalling(child, signals, ready, signo);
    EXPECT_EQ(e.exit_code, 128 + signo);
  }
}

TEST_F(ChildTest, LossSendsSigterm) {
  std::string ready = path("ready");
  Command c = sh("touch \"$0\"; exec sleep 60", ready);
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(c, signals));
  // A grace longer than the test's patience: SIGTERM alone ends it.
  Ending e = child.wait(
      signals, [&] { return fs::exists(ready); }, seconds(600));
  EXPECT_EQ(e.exit_code, 128 + SIGTERM);
  EXPECT_TRUE(e.lost_while_running);
}

TEST_F(ChildTest, LossSendsSigkillAfterTheGrace) {
  std::string ready = path("ready");
  // Ignores SIGTERM (sleep inherits that), so only SIGKILL ends it.
  Command c = sh("trap '' TERM; touch \"$0\"; exec sleep 60", ready);
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(c, signals));
  constexpr milliseconds kGrace{300};
  std::optional<Clock::time_point> lost_at;
  Ending e = child.wait(
      signals,
      [&] {
        if (!lost_at && fs::exists(ready)) lost_at = Clock::now();
        return lost_at.has_value();
      },
      kGrace);
  EXPECT_EQ(e.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(e.lost_while_running);
  ASSERT_TRUE(lost_at.has_value());
  // Never before the grace has passed.
  EXPECT_GE(Clock::now() - *lost_at, kGrace);
}

TEST_F(ChildTest, LossKillsWhatIsLeftOfTheGroup) {
  std::string ready = path("ready");
  std::string background = path("background.pid");
  // The leader exits at SIGTERM; its background child ignores SIGTERM.
  Command c =
      sh("(trap '' TERM; exec sleep 60) & "
         "echo $! > \"$0/background.pid\"; "
         "trap 'exit 0' TERM; touch \"$0/ready\"; "
         "while :; do sleep 0.01; done",
         dir_);
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(c, signals));
  Ending e = child.wait(
      signals, [&] { return fs::exists(ready); }, seconds(600));
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_TRUE(e.lost_while_running);
  pid_t sleeper = read_pid(background);
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(eventually([&] { return ended(sleeper); }));
}

// A leader that starts a background process in its group, waits until that
// has set itself up (by `setup`, then touching $0/ready) and exits 3. The
// background process ends by itself after kPatience at the latest.
Command leaving_behind(const std::string& setup, const fs::path& dir) {
  return sh("(" + setup +
                "; touch \"$0/ready\"; n=0; "
                "while [ $n -lt 3000 ]; do sleep 0.01; n=$((n + 1)); done) & "
                "echo $! > \"$0/background.pid\"; "
                "until [ -e \"$0/ready\" ]; do sleep 0.01; done; exit 3",
            dir);
}

TEST_F(ChildTest, WhatIsLeftOfTheGroupEndsBeforeWaitReturns) {
  Command c = leaving_behind("trap 'touch \"$0/term\"; exit 0' TERM", dir_);
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(c, signals));
  // A grace longer than the test's patience: SIGTERM alone ends it.
  Ending e = child.wait(signals, never_lost(), seconds(600));
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_FALSE(e.lost_while_running);
  pid_t background = read_pid(path("background.pid"));
  ASSERT_GT(background, 0);
  EXPECT_TRUE(ended(background));
  EXPECT_TRUE(fs::exists(path("term")));
}

TEST_F(ChildTest, WhatIsLeftOfTheGroupIsKilledAfterTheGrace) {
  // Ignores SIGTERM (sleep inherits that), so only SIGKILL ends it.
  Command c = leaving_behind("trap '' TERM", dir_);
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(c, signals));
  constexpr milliseconds kGrace{300};
  Clock::time_point start = Clock::now();
  Ending e = child.wait(signals, never_lost(), kGrace);
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_FALSE(e.lost_while_running);
  EXPECT_TRUE(ended(read_pid(path("background.pid"))));
  // SIGKILL never before the grace has passed.
  EXPECT_GE(Clock::now() - start, kGrace);
}

TEST_F(ChildTest, LossWhileTheGroupIsEmptiedKillsItAtOnce) {
  Command c = leaving_behind("trap '' TERM", dir_);
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  Child child = started(Child::spawn(c, signals));
  // Lost once the child has exited (it does once ready exists), while the
  // group it leaves is being emptied. Lost any earlier, the child itself
  // would get SIGTERM.
  const pid_t pid = child.pid();
  Ending e = child.wait(
      signals, [&] { return fs::exists(path("ready")) && ended(pid); },
      seconds(600));
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_TRUE(e.lost_while_running);
  pid_t background = read_pid(path("background.pid"));
  ASSERT_GT(background, 0);
  EXPECT_TRUE(eventually([&] { return ended(background); }));
}

TEST(SignalPipe, DeliversCaughtSignalsInOrderAndRestores) {
  struct sigaction before {};
  sigaction(SIGUSR1, nullptr, &before);
  {
    SignalPipe signals({SIGUSR1, SIGUSR2});
    raise(SIGUSR2);
    raise(SIGUSR1);
    raise(SIGUSR2);
    EXPECT_EQ(signals.take(), (std::vector<int>{SIGUSR2, SIGUSR1, SIGUSR2}));
    EXPECT_EQ(signals.take(), std::vector<int>{});
  }
  struct sigaction after {};
  sigaction(SIGUSR1, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace dlock::cli
