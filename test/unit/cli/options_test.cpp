#include "options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "usage.h"

namespace dlock::cli {
namespace {

using Args = std::vector<std::string>;

template <typename T>
T parsed_as(const Args& args) {
  Parsed p = parse_command_line(args);
  if (const auto* e = std::get_if<UsageError>(&p)) {
    ADD_FAILURE() << "usage error: " << e->message;
    return T{};
  }
  if (!std::holds_alternative<T>(p)) {
    ADD_FAILURE() << "parsed as alternative " << p.index();
    return T{};
  }
  return std::get<T>(p);
}

using Floors = std::vector<std::pair<std::string, Floor>>;

Floors floors(const std::vector<DurationField>& fields) {
  Floors out;
  for (const DurationField& f : fields) out.emplace_back(f.flag, f.floor);
  return out;
}

// The kill-after dlock run would use for args.
std::optional<Millis> kill_after_for(const Args& args) {
  return kill_after_of(parsed_as<RunOptions>(args));
}

UsageError usage_error(const Args& args) {
  Parsed p = parse_command_line(args);
  if (const auto* e = std::get_if<UsageError>(&p)) return *e;
  ADD_FAILURE() << "no usage error; parsed as alternative " << p.index();
  return {};
}

// --------------------------------------------------------------- dlock run

TEST(RunOptions, Defaults) {
  RunOptions o =
      parsed_as<RunOptions>({"run", "nightly-report", "--", "make", "report"});
  EXPECT_EQ(o.lease.name, "nightly-report");
  EXPECT_EQ(o.command, (Args{"make", "report"}));
  EXPECT_EQ(o.lease.owner, std::nullopt);
  EXPECT_EQ(o.lease.ttl.text, "30s");
  EXPECT_EQ(o.lease.ttl.millis, Millis(30000));
  EXPECT_FALSE(o.lease.wait.has_value());
  EXPECT_FALSE(o.lease.lock_delay.has_value());
  EXPECT_FALSE(o.lease.max_hold.has_value());
  EXPECT_FALSE(o.lease.min_hold.has_value());
  EXPECT_EQ(o.lease.conninfo, "");
  EXPECT_EQ(o.lease.conflict_exit_code, 75);
  EXPECT_FALSE(o.lease.pooler);
  EXPECT_EQ(o.lease.verbosity, Verbosity::normal);
  EXPECT_FALSE(o.kill_after.has_value());
  EXPECT_EQ(kill_after_of(o), Millis(3000));  // a tenth of the ttl
}

TEST(RunOptions, EveryOption) {
  RunOptions o = parsed_as<RunOptions>({"run",
                                        "--ttl",
                                        "1m",
                                        "--wait=10s",
                                        "--owner",
                                        "cron@db1",
                                        "--lock-delay",
                                        "2s",
                                        "--max-hold=1h",
                                        "--min-hold",
                                        "55m",
                                        "--conn",
                                        "host=/run/pg dbname=jobs",
                                        "--conflict-exit-code",
                                        "0",
                                        "--kill-after=2s",
                                        "--pooler",
                                        "--verbose",
                                        "job",
                                        "--",
                                        "true"});
  EXPECT_EQ(o.lease.name, "job");
  EXPECT_EQ(o.command, (Args{"true"}));
  EXPECT_EQ(o.lease.ttl.millis, Millis(60000));
  ASSERT_TRUE(o.lease.wait.has_value());
  EXPECT_EQ(o.lease.wait->millis, Millis(10000));
  EXPECT_EQ(o.lease.owner, "cron@db1");
  EXPECT_EQ(o.lease.lock_delay->millis, Millis(2000));
  EXPECT_EQ(o.lease.max_hold->millis, Millis(3600000));
  EXPECT_EQ(o.lease.min_hold->millis, Millis(3300000));
  EXPECT_EQ(o.lease.conninfo, "host=/run/pg dbname=jobs");
  EXPECT_EQ(o.lease.conflict_exit_code, 0);
  ASSERT_TRUE(o.kill_after.has_value());
  EXPECT_EQ(o.kill_after->millis, Millis(2000));
  EXPECT_EQ(kill_after_of(o), Millis(2000));
  EXPECT_TRUE(o.lease.pooler);
  EXPECT_EQ(o.lease.verbosity, Verbosity::verbose);
}

TEST(RunOptions, TheLastOfQuietAndVerboseWins) {
  EXPECT_EQ(parsed_as<RunOptions>({"run", "--verbose", "--quiet", "j", "x"})
                .lease.verbosity,
            Verbosity::quiet);
  EXPECT_EQ(parsed_as<RunOptions>({"run", "--quiet", "--verbose", "j", "x"})
                .lease.verbosity,
            Verbosity::verbose);
}

TEST(RunOptions, CommandStartsAtItsFirstWordWithoutDashDash) {
  RunOptions o = parsed_as<RunOptions>(
      {"run", "job", "--ttl", "1m", "ls", "--ttl", "-l", "--", "x"});
  EXPECT_EQ(o.lease.ttl.millis, Millis(60000));
  EXPECT_EQ(o.command, (Args{"ls", "--ttl", "-l", "--", "x"}));
}

TEST(RunOptions, OnlyTheFirstDashDashEndsOptions) {
  RunOptions o =
      parsed_as<RunOptions>({"run", "job", "--", "--help", "--", "-"});
  EXPECT_EQ(o.command, (Args{"--help", "--", "-"}));
  RunOptions before =
      parsed_as<RunOptions>({"run", "--", "--job", "sh", "-c", "exit 3"});
  EXPECT_EQ(before.lease.name, "--job");
  EXPECT_EQ(before.command, (Args{"sh", "-c", "exit 3"}));
}

TEST(RunOptions, ServerDurationsStayUnread) {
  RunOptions o = parsed_as<RunOptions>(
      {"run", "--ttl", "90 seconds", "--kill-after", "00:00:02", "j", "x"});
  EXPECT_EQ(o.lease.ttl.text, "90 seconds");
  EXPECT_EQ(o.lease.ttl.millis, std::nullopt);
  ASSERT_TRUE(o.kill_after.has_value());
  EXPECT_EQ(o.kill_after->text, "00:00:02");
  EXPECT_EQ(o.kill_after->millis, std::nullopt);
  EXPECT_EQ(kill_after_of(o), std::nullopt);
  // Both are checked once the server has read them.
  EXPECT_EQ(check_kill_after(o), std::nullopt);
}

TEST(RunOptions, DefaultKillAfterWaitsForTheServersTtl) {
  RunOptions o =
      parsed_as<RunOptions>({"run", "--ttl", "90 seconds", "j", "x"});
  EXPECT_FALSE(o.kill_after.has_value());
  EXPECT_EQ(floors(duration_fields(o)), (Floors{{"--ttl", Floor::above_zero}}));
  EXPECT_EQ(kill_after_of(o), std::nullopt);
  EXPECT_EQ(check_kill_after(o), std::nullopt);
  o.lease.ttl.millis = Millis(90000);  // what the server answers
  EXPECT_EQ(kill_after_of(o), Millis(5000));
  o.lease.ttl.millis = Millis(1000);
  EXPECT_EQ(kill_after_of(o), Millis(100));
  EXPECT_EQ(check_kill_after(o),
            "--ttl 90 seconds leaves no room for --kill-after (default "
            "0.100 s, a tenth of the ttl): the ttl must be more than 3 x "
            "(kill-after + 250ms), here 1.050 s");
}

TEST(RunOptions, Help) {
  Parsed p = parse_command_line({"run", "job", "--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequest>(p));
  EXPECT_EQ(std::get<HelpRequest>(p).topic, "run");
  // After the command's first word, --help is the command's.
  RunOptions o = parsed_as<RunOptions>({"run", "job", "ls", "--help"});
  EXPECT_EQ(o.command, (Args{"ls", "--help"}));
}

TEST(RunOptions, UsageErrors) {
  struct Case {
    Args args;
    std::string message;
  };
  const Case cases[] = {
      {{"run"}, "missing NAME"},
      {{"run", "job"}, "missing COMMAND"},
      {{"run", "job", "--"}, "missing COMMAND"},
      {{"run", "--ttl"}, "option '--ttl' requires an argument"},
      {{"run", "--ttl="}, "option '--ttl' needs a duration"},
      {{"run", "--ttl", "", "j", "x"}, "option '--ttl' needs a duration"},
      {{"run", "--bogus", "j", "x"}, "unrecognized option '--bogus'"},
      {{"run", "-t", "j", "x"}, "unrecognized option '-t'"},
      {{"run", "--pooler=yes", "j", "x"},
       "option '--pooler' doesn't allow an argument"},
      {{"run", "--conflict-exit-code", "256", "j", "x"},
       "option '--conflict-exit-code' needs an exit code from 0 to 255, not "
       "'256'"},
      {{"run", "--conflict-exit-code", "-1", "j", "x"},
       "option '--conflict-exit-code' needs an exit code from 0 to 255, not "
       "'-1'"},
      {{"run", "--conflict-exit-code", "7x", "j", "x"},
       "option '--conflict-exit-code' needs an exit code from 0 to 255, not "
       "'7x'"},
      {{"run", "--ttl", "0s", "j", "x"},
       "--ttl must be more than 0 (got '0s')"},
      {{"run", "--ttl", "0ms", "--kill-after", "0s", "j", "x"},
       "--ttl must be more than 0 (got '0ms')"},
  };
  for (const Case& c : cases) {
    UsageError e = usage_error(c.args);
    EXPECT_EQ(e.topic, "run") << c.message;
    EXPECT_EQ(e.message, c.message);
  }
}

// The ttl must be more than 3 x (kill-after + 250ms).
TEST(RunOptions, KillAfterMustLeaveRoomInTheTtl) {
  UsageError e =
      usage_error({"run", "--ttl", "10s", "--kill-after", "5s", "j", "x"});
  EXPECT_EQ(e.message,
            "--ttl 10s leaves no room for --kill-after 5s: the ttl must be "
            "more than 3 x (kill-after + 250ms), here 15.750 s");
  UsageError at_the_edge =
      usage_error({"run", "--ttl", "15s750ms", "--kill-after", "5s", "j", "x"});
  EXPECT_EQ(at_the_edge.message,
            "--ttl 15s750ms leaves no room for --kill-after 5s: the ttl must "
            "be more than 3 x (kill-after + 250ms), here 15.750 s");
  EXPECT_EQ(parsed_as<RunOptions>(
                {"run", "--ttl", "15s751ms", "--kill-after", "5s", "j", "x"})
                .lease.ttl.millis,
            Millis(15751));
  EXPECT_EQ(
      kill_after_for({"run", "--ttl", "1s", "--kill-after", "0s", "j", "x"}),
      Millis(0));
  EXPECT_EQ(
      usage_error({"run", "--ttl", "750ms", "--kill-after", "0s", "j", "x"})
          .message,
      "--ttl 750ms leaves no room for --kill-after 0s: the ttl must be "
      "more than 3 x (kill-after + 250ms), here 0.750 s");
  EXPECT_EQ(keeper_margin(Millis(5000)), Millis(5250));
}

// The default is the smaller of 5s and a tenth of the ttl, so that short
// ttls need no --kill-after.
TEST(RunOptions, DefaultKillAfterIsATenthOfTheTtlUpTo5s) {
  EXPECT_EQ(default_kill_after(Millis(10000)), Millis(1000));
  EXPECT_EQ(default_kill_after(Millis(30000)), Millis(3000));
  EXPECT_EQ(default_kill_after(Millis(49999)), Millis(4999));
  EXPECT_EQ(default_kill_after(Millis(50000)), Millis(5000));
  EXPECT_EQ(default_kill_after(Millis(600000)), Millis(5000));
  EXPECT_EQ(default_kill_after(Millis(1075)), Millis(107));

  RunOptions ten = parsed_as<RunOptions>({"run", "--ttl", "10s", "j", "x"});
  EXPECT_FALSE(ten.kill_after.has_value());
  EXPECT_EQ(kill_after_of(ten), Millis(1000));
  EXPECT_EQ(kill_after_for({"run", "--ttl", "10m", "j", "x"}), Millis(5000));
  // The smallest ttl the default leaves room in: 3 x (107 + 250) = 1071.
  EXPECT_EQ(kill_after_for({"run", "--ttl", "1s72ms", "j", "x"}), Millis(107));
  EXPECT_EQ(usage_error({"run", "--ttl", "1s71ms", "j", "x"}).message,
            "--ttl 1s71ms leaves no room for --kill-after (default 0.107 s, "
            "a tenth of the ttl): the ttl must be more than 3 x (kill-after "
            "+ 250ms), here 1.071 s");
  // An explicit --kill-after is taken as it is, and checked.
  EXPECT_EQ(
      kill_after_for({"run", "--ttl", "10m", "--kill-after", "20s", "j", "x"}),
      Millis(20000));
  EXPECT_EQ(
      usage_error({"run", "--ttl", "1m", "--kill-after", "20s", "j", "x"})
          .message,
      "--ttl 1m leaves no room for --kill-after 20s: the ttl must be more "
      "than 3 x (kill-after + 250ms), here 60.750 s");
}

TEST(RunOptions, ChecksDurationsTheServerRead) {
  RunOptions o =
      parsed_as<RunOptions>({"run", "--ttl", "1 min", "--wait", "a while",
                             "--kill-after", "x", "j", "c"});
  std::vector<DurationField> fields = duration_fields(o);
  EXPECT_EQ(floors(fields), (Floors{{"--ttl", Floor::above_zero},
                                    {"--wait", Floor::zero},
                                    {"--kill-after", Floor::zero}}));
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(check_durations(fields), std::nullopt);

  // What the server might answer.
  fields[0].value->millis = Millis(60000);
  fields[1].value->millis = Millis(-1);
  fields[2].value->millis = Millis(1000);
  EXPECT_EQ(check_durations(fields),
            "--wait must not be negative (got 'a while')");
  fields[1].value->millis = Millis(0);
  EXPECT_EQ(check_durations(fields), std::nullopt);
  fields[0].value->millis = Millis(0);
  EXPECT_EQ(check_durations(fields), "--ttl must be more than 0 (got '1 min')");
  fields[0].value->millis = Millis(60000);
  fields[2].value->millis = Millis(20000);
  EXPECT_EQ(check_kill_after(o),
            "--ttl 1 min leaves no room for --kill-after x: the ttl must be "
            "more than 3 x (kill-after + 250ms), here 60.750 s");
}

TEST(RunOptions, LeaseTermsAreLeftToTheServer) {
  // (--max-hold's own rule, the keeper's room, is checked below.)
  RunOptions o = parsed_as<RunOptions>({"run", "--lock-delay", "-1 s",
                                        "--max-hold", "4s", "--min-hold", "2d",
                                        "--kill-after", "1s", "j", "c"});
  std::vector<DurationField> fields = duration_fields(o);
  EXPECT_EQ(floors(fields), (Floors{{"--ttl", Floor::above_zero},
                                    {"--lock-delay", Floor::none},
                                    {"--max-hold", Floor::none},
                                    {"--min-hold", Floor::none},
                                    {"--kill-after", Floor::zero}}));
  ASSERT_EQ(fields.size(), 5u);
  fields[1].value->millis = Millis(-1000);
  EXPECT_EQ(check_durations(fields), std::nullopt);
}

// --max-hold ends the lease as the ttl would: the same rule.
TEST(RunOptions, MaxHoldMustLeaveRoomForTheKeeper) {
  struct Case {
    Args args;
    std::string message;
  };
  const std::string rule = "must be more than 3 x (kill-after + 250ms), here ";
  const Case cases[] = {
      {{"--max-hold", "3s", "--kill-after", "1s"},
       "--max-hold 3s leaves no room for --kill-after 1s: the max-hold " +
           rule + "3.750 s"},
      {{"--max-hold", "3s750ms", "--kill-after", "1s"},
       "--max-hold 3s750ms leaves no room for --kill-after 1s: the max-hold " +
           rule + "3.750 s"},
      // kill-after's default, from the default ttl of 30s: 3s.
      {{"--max-hold", "9s"},
       "--max-hold 9s leaves no room for --kill-after (default 3.000 s, a "
       "tenth of the ttl): the max-hold " +
           rule + "9.750 s"},
      // Zero and below are below the rule too (the server refuses
      // negatives).
      {{"--max-hold", "0s", "--kill-after", "0s"},
       "--max-hold 0s leaves no room for --kill-after 0s: the max-hold " +
           rule + "0.750 s"},
      // The ttl's rule is told first.
      {{"--ttl", "1s", "--max-hold", "1s", "--kill-after", "1s"},
       "--ttl 1s leaves no room for --kill-after 1s: the ttl " + rule +
           "3.750 s"},
  };
  for (const Case& c : cases) {
    Args args = {"run"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), {"j", "x"});
    EXPECT_EQ(usage_error(args).message, c.message);
  }
  RunOptions o = parsed_as<RunOptions>(
      {"run", "--max-hold", "3s751ms", "--kill-after", "1s", "j", "x"});
  ASSERT_TRUE(o.lease.max_hold.has_value());
  EXPECT_EQ(o.lease.max_hold->millis, Millis(3751));
}

TEST(RunOptions, MaxHoldTheServerReadIsCheckedThen) {
  RunOptions o = parsed_as<RunOptions>(
      {"run", "--max-hold", "3 seconds", "--kill-after", "1s", "j", "x"});
  EXPECT_EQ(check_kill_after(o), std::nullopt);  // not read yet
  o.lease.max_hold->millis = Millis(3000);       // what the server answers
  EXPECT_EQ(check_kill_after(o),
            "--max-hold 3 seconds leaves no room for --kill-after 1s: the "
            "max-hold must be more than 3 x (kill-after + 250ms), here "
            "3.750 s");
  o.lease.max_hold->millis = Millis(60000);
  EXPECT_EQ(check_kill_after(o), std::nullopt);
}

// Every duration is at most 100 years either way: beyond, the server would
// fail on the interval dlock sends it.
TEST(RunOptions, DurationsAreAtMost100Years) {
  EXPECT_EQ(
      usage_error({"run", "--ttl", "9223372036854775807ms", "j", "x"}).message,
      "--ttl must be at most 100 years (got '9223372036854775807ms')");
  EXPECT_EQ(usage_error({"run", "--wait", "36525d1ms", "j", "x"}).message,
            "--wait must be at most 100 years (got '36525d1ms')");
  EXPECT_EQ(parsed_as<RunOptions>({"run", "--wait", "36525d", "j", "x"})
                .lease.wait->millis,
            kLongestDuration);
  EXPECT_EQ(
      usage_error({"acquire", "--ttl", "1m", "--min-hold", "99999999d", "x"})
          .message,
      "--min-hold must be at most 100 years (got '99999999d')");
  EXPECT_EQ(usage_error({"renew", "x", "1", "--ttl", "36526d"}).message,
            "--ttl must be at most 100 years (got '36526d')");

  // Durations the server read: '100 years' is the most.
  RunOptions o = parsed_as<RunOptions>(
      {"run", "--ttl", "100 years", "--lock-delay", "x", "j", "c"});
  std::vector<DurationField> fields = duration_fields(o);
  ASSERT_EQ(fields.size(), 2u);
  fields[0].value->millis = Millis(3155760000000);  // 100 * 365.25 days
  fields[1].value->millis = -Millis(3155760000000);
  EXPECT_EQ(check_durations(fields), std::nullopt);
  fields[1].value->millis = -Millis(3155760000001);
  EXPECT_EQ(check_durations(fields),
            "--lock-delay must be at least -100 years (got 'x')");
  fields[0].value->millis = Millis(3155760000001);
  EXPECT_EQ(check_durations(fields),
            "--ttl must be at most 100 years (got '100 years')");
}

// ----------------------------------------------------------- dlock acquire

TEST(AcquireOptions, NameAndTtl) {
  AcquireOptions o = parsed_as<AcquireOptions>(
      {"acquire", "--ttl", "2m", "nightly-report", "--wait", "5s", "--pooler",
       "--conflict-exit-code=3", "--quiet"});
  EXPECT_EQ(o.lease.name, "nightly-report");
  EXPECT_EQ(o.lease.ttl.millis, Millis(120000));
  EXPECT_EQ(o.lease.wait->millis, Millis(5000));
  EXPECT_TRUE(o.lease.pooler);
  EXPECT_EQ(o.lease.conflict_exit_code, 3);
  EXPECT_EQ(o.lease.verbosity, Verbosity::quiet);
  EXPECT_EQ(o.lease.owner, std::nullopt);
  // No keeper here: --max-hold is the server's to check.
  EXPECT_EQ(parsed_as<AcquireOptions>(
                {"acquire", "--ttl", "1m", "--max-hold", "1s", "x"})
                .lease.max_hold->millis,
            Millis(1000));
}

TEST(AcquireOptions, UsageErrors) {
  EXPECT_EQ(usage_error({"acquire", "job"}).message, "missing --ttl");
  EXPECT_EQ(usage_error({"acquire", "--ttl", "1m"}).message, "missing NAME");
  EXPECT_EQ(usage_error({"acquire", "--ttl", "1m", "a", "b"}).message,
            "extra operand 'b'");
  EXPECT_EQ(usage_error({"acquire", "--ttl", "1m", "--kill-after", "1s", "a"})
                .message,
            "unrecognized option '--kill-after'");
  EXPECT_EQ(usage_error({"acquire", "--ttl", "0s", "a"}).message,
            "--ttl must be more than 0 (got '0s')");
  EXPECT_EQ(usage_error({"acquire", "a"}).topic, "acquire");
}

TEST(AcquireOptions, DashDashEndsOptions) {
  AcquireOptions o =
      parsed_as<AcquireOptions>({"acquire", "--ttl", "1m", "--", "--odd"});
  EXPECT_EQ(o.lease.name, "--odd");
}

// ------------------------------------------------------ renew and release

TEST(RenewOptions, NameTokenAndTtl) {
  RenewOptions o = parsed_as<RenewOptions>(
      {"renew", "job", "42", "--ttl", "45s", "--owner", "me"});
  EXPECT_EQ(o.name, "job");
  EXPECT_EQ(o.token, 42);
  EXPECT_EQ(o.ttl->millis, Millis(45000));
  EXPECT_EQ(o.owner, "me");
  RenewOptions plain = parsed_as<RenewOptions>({"renew", "job", "7"});
  EXPECT_FALSE(plain.ttl.has_value());
  EXPECT_FALSE(plain.owner.has_value());
  EXPECT_EQ(plain.token, 7);
}

TEST(RenewOptions, UsageErrors) {
  EXPECT_EQ(usage_error({"renew", "job"}).message, "missing TOKEN");
  EXPECT_EQ(usage_error({"renew"}).message, "missing NAME");
  EXPECT_EQ(usage_error({"renew", "job", "4x2"}).message,
            "invalid token '4x2'");
  EXPECT_EQ(usage_error({"renew", "job", "99999999999999999999"}).message,
            "invalid token '99999999999999999999'");
  EXPECT_EQ(usage_error({"renew", "job", "1", "2"}).message,
            "extra operand '2'");
  EXPECT_EQ(usage_error({"renew", "job", "1", "--ttl", "0s"}).message,
            "--ttl must be more than 0 (got '0s')");
  EXPECT_EQ(usage_error({"renew", "job", "1", "--wait", "1s"}).message,
            "unrecognized option '--wait'");
}

TEST(ReleaseOptions, NameAndToken) {
  ReleaseOptions o = parsed_as<ReleaseOptions>(
      {"release", "--conn", "dbname=x", "job", "9223372036854775807"});
  EXPECT_EQ(o.name, "job");
  EXPECT_EQ(o.token, 9223372036854775807);
  EXPECT_EQ(o.conninfo, "dbname=x");
  // A token dlock never issues is still the server's to refuse (LD003).
  EXPECT_EQ(parsed_as<ReleaseOptions>({"release", "job", "--", "-3"}).token,
            -3);
  EXPECT_EQ(usage_error({"release", "job", "1", "--ttl", "1s"}).message,
            "unrecognized option '--ttl'");
  EXPECT_EQ(usage_error({"release", "job", ""}).message, "invalid token ''");
}

// One option set for every subcommand: renew and release accept run's and
// acquire's flags, and ignore them.
TEST(RenewAndReleaseOptions, AcceptQuietVerboseAndPooler) {
  RenewOptions r = parsed_as<RenewOptions>(
      {"renew", "--quiet", "job", "--pooler", "7", "--verbose"});
  EXPECT_EQ(r.name, "job");
  EXPECT_EQ(r.token, 7);
  ReleaseOptions l = parsed_as<ReleaseOptions>(
      {"release", "--pooler", "--quiet", "--verbose", "job", "8"});
  EXPECT_EQ(l.name, "job");
  EXPECT_EQ(l.token, 8);
  EXPECT_EQ(usage_error({"release", "--quiet=yes", "job", "8"}).message,
            "option '--quiet' doesn't allow an argument");
}

// ------------------------------------------------------------ dlock status

TEST(StatusOptions, Names) {
  EXPECT_EQ(parsed_as<StatusOptions>({"status"}).names, Args{});
  StatusOptions o =
      parsed_as<StatusOptions>({"status", "a", "--conn", "c", "b"});
  EXPECT_EQ(o.names, (Args{"a", "b"}));
  EXPECT_EQ(o.conninfo, "c");
  // run's and acquire's flags, accepted and ignored.
  EXPECT_EQ(parsed_as<StatusOptions>(
                {"status", "--pooler", "a", "--quiet", "--verbose"})
                .names,
            Args{"a"});
}

// ------------------------------------------------------------ dlock itself

TEST(CommandLine, HelpVersionAndUnknownCommands) {
  for (const char* help : {"--help", "-h"}) {
    Parsed p = parse_command_line({help});
    ASSERT_TRUE(std::holds_alternative<HelpRequest>(p));
    EXPECT_EQ(std::get<HelpRequest>(p).topic, "");
  }
  EXPECT_TRUE(std::holds_alternative<VersionRequest>(
      parse_command_line({"--version"})));
  for (const char* command : {"acquire", "renew", "release", "status"}) {
    Parsed p = parse_command_line({command, "--help"});
    ASSERT_TRUE(std::holds_alternative<HelpRequest>(p)) << command;
    EXPECT_EQ(std::get<HelpRequest>(p).topic, command);
  }
  EXPECT_EQ(usage_error({}).message, "missing command");
  EXPECT_EQ(usage_error({"lock"}).message, "unknown command 'lock'");
  EXPECT_EQ(usage_error({"lock"}).topic, "");
  EXPECT_EQ(usage_error({"--ttl"}).message, "unrecognized option '--ttl'");
}

TEST(Usage, ErrorTextNamesTheSynopsisAndTheHelp) {
  EXPECT_EQ(usage_error_text("run", "missing NAME"),
            "dlock: missing NAME\n"
            "Usage: dlock run [OPTION]... NAME [--] COMMAND [ARG]...\n"
            "Try 'dlock run --help' for more information.\n");
  EXPECT_EQ(usage_error_text("", "missing command"),
            "dlock: missing command\n"
            "Usage: dlock COMMAND [OPTION]... [ARG]...\n"
            "Try 'dlock --help' for more information.\n");
}

TEST(Usage, EveryTopicHasHelp) {
  for (const char* topic : {"run", "acquire", "renew", "release", "status"}) {
    std::string_view help = help_text(topic);
    EXPECT_EQ(help.substr(0, 13 + std::string_view(topic).size()),
              "Usage: dlock " + std::string(topic))
        << topic;
  }
  EXPECT_EQ(help_text("").substr(0, 13), "Usage: dlock ");
}

}  // namespace
}  // namespace dlock::cli
