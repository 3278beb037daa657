// The dlock command line, parsed into plain structs: no libpq here, and
// errors come back as values (UsageError), so every rule is unit-tested.
//
// Durations the client cannot read itself are left with millis unset;
// server_durations.h has the server read them, then check_durations() and
// check_kill_after() run again on the values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "durations.h"

namespace dlock::cli {

// EX_TEMPFAIL, as flock -E suggests: "busy, try again later".
inline constexpr int kDefaultConflictExitCode = 75;

enum class Verbosity { quiet, normal, verbose };

// What run and acquire share: which lease, on which terms, how to wait.
struct LeaseRequest {
  std::string name;
  std::optional<std::string> owner;  // unset: the subcommand's default
  Duration ttl;
  std::optional<Duration> wait;  // unset: a busy lease answers at once
  std::optional<Duration> lock_delay;
  std::optional<Duration> max_hold;
  std::optional<Duration> min_hold;
  std::string conninfo;  // empty: the PG* environment variables
  int conflict_exit_code = kDefaultConflictExitCode;
  bool pooler = false;  // through a transaction pooler: poll, no LISTEN
  Verbosity verbosity = Verbosity::normal;
};

struct RunOptions {
  LeaseRequest lease;  // ttl defaults to 30s here
  std::vector<std::string> command;
  // Between SIGTERM and SIGKILL; unset: default_kill_after() of the ttl.
  std::optional<Duration> kill_after;
};

struct AcquireOptions {
  LeaseRequest lease;  // ttl is required here
};

struct RenewOptions {
  std::string name;
  std::int64_t token = 0;
  std::optional<Duration> ttl;  // unset: the grant's own ttl
  std::optional<std::string> owner;
  std::string conninfo;
};

struct ReleaseOptions {
  std::string name;
  std::int64_t token = 0;
  std::optional<std::string> owner;
  std::string conninfo;
};

struct StatusOptions {
  std::vector<std::string> names;  // empty: every lease
  std::string conninfo;
};

// --help: topic is the subcommand ("" for dlock itself).
struct HelpRequest {
  std::string topic;
};
struct VersionRequest {};

// A command line dlock refuses (exit 2); topic names the subcommand whose
// usage to show ("" for dlock itself).
struct UsageError {
  std::string topic;
  std::string message;
};

using Parsed =
    std::variant<UsageError, HelpRequest, VersionRequest, RunOptions,
                 AcquireOptions, RenewOptions, ReleaseOptions, StatusOptions>;

// args: the words after the program's name.
Parsed parse_command_line(const std::vector<std::string>& args);

// How low a duration option may go.
enum class Floor { none, zero, above_zero };

// One duration option of a parsed command, for reading it on the server
// and checking it.
struct DurationField {
  std::string_view flag;  // "--ttl"
  Duration* value;
  Floor floor;
};

// The duration options that were given (or defaulted), in command-line
// order of the usage text.
std::vector<DurationField> duration_fields(RunOptions& o);
std::vector<DurationField> duration_fields(AcquireOptions& o);
std::vector<DurationField> duration_fields(RenewOptions& o);
std::vector<DurationField> duration_fields(ReleaseOptions& o);  // none

// The first known duration below its floor or beyond kLongestDuration
// either way, as a message ("--ttl must be more than 0"); durations not
// read yet are skipped.
std::optional<std::string> check_durations(
    const std::vector<DurationField>& fields);

// The keeper's fixed safety margin for dlock run: the time to stop
// COMMAND (kill-after) plus 250 ms to notice the loss and signal.
Millis keeper_margin(Millis kill_after);

// --kill-after's default: the smaller of 5 s and a tenth of the ttl, so
// that a short ttl does not break the rule below (any ttl from 1.072 s up
// keeps it).
Millis default_kill_after(Millis ttl);

// --kill-after, or its default once the ttl is read; nullopt while the
// one it depends on is not read yet.
std::optional<Millis> kill_after_of(const RunOptions& o);

// dlock run's rule: the ttl must be more than 3 x keeper_margin(kill-after).
// The keeper renews after a third of the ttl and gives up at its deadline,
// ttl - 1% - margin after the grant: the rule leaves about a third of the
// ttl between the two for retries. --max-hold, which ends every renewal's
// validity at the same instant, must pass the same rule, or COMMAND would
// be stopped as lost early on, or never started. nullopt when both hold,
// or while what they need is not read yet.
std::optional<std::string> check_kill_after(const RunOptions& o);

}  // namespace dlock::cli
