#include "options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <utility>

namespace dlock::cli {

namespace {

// One long option of a subcommand. apply() takes its value ("" for a flag)
// and returns an error message, or nullopt.
struct Option {
  std::string_view name;  // without the leading "--"
  bool takes_value;
  std::function<std::optional<std::string>(const std::string&)> apply;
};

using Options = std::vector<Option>;

std::string flag_text(std::string_view name) {
  return "--" + std::string(name);
}

// Conversions of an option's value into its field.
std::optional<std::string> assign(std::string_view, const std::string& v,
                                  std::string& out) {
  out = v;
  return std::nullopt;
}

std::optional<std::string> assign(std::string_view name, const std::string& v,
                                  Duration& out) {
  if (v.empty()) return "option '" + flag_text(name) + "' needs a duration";
  out = duration_from_text(v);
  return std::nullopt;
}

// The one integer option: an exit code.
std::optional<std::string> assign(std::string_view name, const std::string& v,
                                  int& out) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n < 0 || n > 255) {
    return "option '" + flag_text(name) + "' needs an exit code from 0 to " +
           "255, not '" + v + "'";
  }
  out = static_cast<int>(n);
  return std::nullopt;
}

template <typename T>
std::optional<std::string> assign(std::string_view name, const std::string& v,
                                  std::optional<T>& out) {
  T value{};
  if (auto error = assign(name, v, value)) return error;
  out = std::move(value);
  return std::nullopt;
}

template <typename T>
Option value(std::string_view name, T& target) {
  return {name, true, [name, &target](const std::string& v) {
            return assign(name, v, target);
          }};
}

Option flag(std::string_view name, std::function<void()> set) {
  return {name, false, [set = std::move(set)](const std::string&) {
            set();
            return std::optional<std::string>();
          }};
}

Options lease_options(LeaseRequest& r) {
  return {
      value("ttl", r.ttl),
      value("wait", r.wait),
      value("owner", r.owner),
      value("lock-delay", r.lock_delay),
      value("max-hold", r.max_hold),
      value("min-hold", r.min_hold),
      value("conn", r.conninfo),
      value("conflict-exit-code", r.conflict_exit_code),
      flag("pooler", [&r] { r.pooler = true; }),
      flag("quiet", [&r] { r.verbosity = Verbosity::quiet; }),
      flag("verbose", [&r] { r.verbosity = Verbosity::verbose; }),
  };
}

// options, and the flags of run and acquire that renew, release and status
// accept and ignore, so that a script can give every subcommand one option
// set: they have no busy lease to be quiet about, nothing more to report,
// and one plain statement each to send, which a transaction pooler passes
// as it is.
Options with_ignored_flags(Options options) {
  for (std::string_view name : {"pooler", "quiet", "verbose"}) {
    options.push_back(flag(name, [] {}));
  }
  return options;
}

// A subcommand's words once its options are applied.
struct Words {
  std::vector<std::string> operands;
  bool help = false;
};

// Applies the options in args[begin..] and collects the operands. Options
// end at "--", and, when command_after is set, at the operand that follows
// the first command_after ones (dlock run's COMMAND): the rest are operands
// as they are.
std::optional<std::string> read_words(const std::vector<std::string>& args,
                                      std::size_t begin, const Options& options,
                                      std::optional<std::size_t> command_after,
                                      Words& out) {
  for (std::size_t i = begin; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto rest = [&](std::size_t from) {
      out.operands.insert(out.operands.end(),
                          args.begin() + static_cast<long>(from), args.end());
    };
    if (arg == "--") {
      rest(i + 1);
      return std::nullopt;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (command_after && out.operands.size() == *command_after) {
        rest(i);
        return std::nullopt;
      }
      out.operands.push_back(arg);
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      continue;
    }
    if (arg[1] != '-') return "unrecognized option '" + arg + "'";
    std::size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? eq : eq - 2);
    const Option* option = nullptr;
    for (const Option& o : options) {
      if (o.name == name) option = &o;
    }
    if (!option) return "unrecognized option '--" + name + "'";
    std::string v;
    if (eq != std::string::npos) {
      if (!option->takes_value) {
        return "option '--" + name + "' doesn't allow an argument";
      }
      v = arg.substr(eq + 1);
    } else if (option->takes_value) {
      if (i + 1 == args.size()) {
        return "option '--" + name + "' requires an argument";
      }
      v = args[++i];
    }
    if (auto error = option->apply(v)) return error;
  }
  return std::nullopt;
}

std::optional<std::int64_t> parse_token(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) return std::nullopt;
  return n;
}

// A parsed command, or the first rule it breaks.
template <typename T>
Parsed checked(const char* topic, T options,
               std::optional<std::string> extra_error = std::nullopt) {
  std::optional<std::string> error = check_durations(duration_fields(options));
  if (!error) error = std::move(extra_error);
  if (error) return UsageError{topic, *error};
  return options;
}

Parsed parse_run(const std::vector<std::string>& args) {
  RunOptions o;
  o.lease.ttl = duration_from_text("30s");
  Options options = lease_options(o.lease);
  options.push_back(value("kill-after", o.kill_after));
  Words words;
  if (auto error = read_words(args, 1, options, 1, words)) {
    return UsageError{"run", *error};
  }
  if (words.help) return HelpRequest{"run"};
  if (words.operands.empty()) return UsageError{"run", "missing NAME"};
  if (words.operands.size() == 1) return UsageError{"run", "missing COMMAND"};
  o.lease.name = words.operands[0];
  o.command.assign(words.operands.begin() + 1, words.operands.end());
  std::optional<std::string> rule = check_kill_after(o);
  return checked("run", std::move(o), std::move(rule));
}

Parsed parse_acquire(const std::vector<std::string>& args) {
  AcquireOptions o;
  Words words;
  if (auto error =
          read_words(args, 1, lease_options(o.lease), std::nullopt, words)) {
    return UsageError{"acquire", *error};
  }
  if (words.help) return HelpRequest{"acquire"};
  if (words.operands.empty()) return UsageError{"acquire", "missing NAME"};
  if (words.operands.size() > 1) {
    return UsageError{"acquire", "extra operand '" + words.operands[1] + "'"};
  }
  if (o.lease.ttl.text.empty()) return UsageError{"acquire", "missing --ttl"};
  o.lease.name = words.operands[0];
  return checked("acquire", std::move(o));
}

// NAME TOKEN, the operands of renew and release.
std::optional<std::string> name_and_token(const Words& words, std::string& name,
                                          std::int64_t& token) {
  if (words.operands.empty()) return "missing NAME";
  if (words.operands.size() == 1) return "missing TOKEN";
  if (words.operands.size() > 2) {
    return "extra operand '" + words.operands[2] + "'";
  }
  std::optional<std::int64_t> t = parse_token(words.operands[1]);
  if (!t) return "invalid token '" + words.operands[1] + "'";
  name = words.operands[0];
  token = *t;
  return std::nullopt;
}

// renew and release: NAME TOKEN and options, which refer to o.
template <typename T>
Parsed parse_grant_command(const char* topic,
                           const std::vector<std::string>& args, T& o,
                           const Options& options) {
  Words words;
  std::optional<std::string> error =
      read_words(args, 1, options, std::nullopt, words);
  if (!error && words.help) return HelpRequest{topic};
  if (!error) error = name_and_token(words, o.name, o.token);
  if (error) return UsageError{topic, *error};
  return checked(topic, std::move(o));
}

Parsed parse_renew(const std::vector<std::string>& args) {
  RenewOptions o;
  return parse_grant_command(
      "renew", args, o,
      with_ignored_flags({value("ttl", o.ttl), value("owner", o.owner),
                          value("conn", o.conninfo)}));
}

Parsed parse_release(const std::vector<std::string>& args) {
  ReleaseOptions o;
  return parse_grant_command(
      "release", args, o,
      with_ignored_flags({value("owner", o.owner), value("conn", o.conninfo)}));
}

Parsed parse_status(const std::vector<std::string>& args) {
  StatusOptions o;
  Words words;
  if (auto error =
          read_words(args, 1, with_ignored_flags({value("conn", o.conninfo)}),
                     std::nullopt, words)) {
    return UsageError{"status", *error};
  }
  if (words.help) return HelpRequest{"status"};
  o.names = std::move(words.operands);
  return o;
}

std::optional<std::string> out_of_range(const DurationField& f) {
  const Duration& d = *f.value;
  if (!d.millis) return std::nullopt;
  std::string got = " (got '" + d.text + "')";
  if (*d.millis > kLongestDuration) {
    return std::string(f.flag) + " must be at most 100 years" + got;
  }
  if (*d.millis < -kLongestDuration) {
    return std::string(f.flag) + " must be at least -100 years" + got;
  }
  if (f.floor == Floor::above_zero && d.millis->count() <= 0) {
    return std::string(f.flag) + " must be more than 0" + got;
  }
  if (f.floor == Floor::zero && d.millis->count() < 0) {
    return std::string(f.flag) + " must not be negative" + got;
  }
  return std::nullopt;
}

void add_field(std::vector<DurationField>& fields, std::string_view flag,
               std::optional<Duration>& d, Floor floor) {
  if (d) fields.push_back({flag, &*d, floor});
}

std::vector<DurationField> lease_fields(LeaseRequest& r) {
  std::vector<DurationField> fields;
  if (!r.ttl.text.empty())
    fields.push_back({"--ttl", &r.ttl, Floor::above_zero});
  add_field(fields, "--wait", r.wait, Floor::zero);
  // The server checks these (negative, above dlock.max_ttl, min_hold above
  // max_hold): one home for those rules.
  add_field(fields, "--lock-delay", r.lock_delay, Floor::none);
  add_field(fields, "--max-hold", r.max_hold, Floor::none);
  add_field(fields, "--min-hold", r.min_hold, Floor::none);
  return fields;
}

}  // namespace

Parsed parse_command_line(const std::vector<std::string>& args) {
  if (args.empty()) return UsageError{"", "missing command"};
  const std::string& first = args[0];
  if (first == "-h" || first == "--help") return HelpRequest{""};
  if (first == "--version") return VersionRequest{};
  if (first == "run") return parse_run(args);
  if (first == "acquire") return parse_acquire(args);
  if (first == "renew") return parse_renew(args);
  if (first == "release") return parse_release(args);
  if (first == "status") return parse_status(args);
  if (first.size() > 1 && first[0] == '-') {
    return UsageError{"", "unrecognized option '" + first + "'"};
  }
  return UsageError{"", "unknown command '" + first + "'"};
}

std::vector<DurationField> duration_fields(RunOptions& o) {
  std::vector<DurationField> fields = lease_fields(o.lease);
  add_field(fields, "--kill-after", o.kill_after, Floor::zero);
  return fields;
}

std::vector<DurationField> duration_fields(AcquireOptions& o) {
  return lease_fields(o.lease);
}

std::vector<DurationField> duration_fields(RenewOptions& o) {
  std::vector<DurationField> fields;
  add_field(fields, "--ttl", o.ttl, Floor::above_zero);
  return fields;
}

std::vector<DurationField> duration_fields(ReleaseOptions&) { return {}; }

std::optional<std::string> check_durations(
    const std::vector<DurationField>& fields) {
  for (const DurationField& f : fields) {
    if (auto error = out_of_range(f)) return error;
  }
  return std::nullopt;
}

Millis keeper_margin(Millis kill_after) {
  // The keeper's own default fixed margin (local_deadline.h): the time to
  // notice the loss and signal; kill-after is added for the grace.
  return Millis(250) + kill_after;
}

Millis default_kill_after(Millis ttl) {
  return std::min<Millis>(Millis(5000), ttl / 10);
}

std::optional<Millis> kill_after_of(const RunOptions& o) {
  if (o.kill_after) return o.kill_after->millis;
  if (!o.lease.ttl.millis) return std::nullopt;
  return default_kill_after(*o.lease.ttl.millis);
}

std::optional<std::string> check_kill_after(const RunOptions& o) {
  std::optional<Millis> kill_after = kill_after_of(o);
  if (!kill_after || kill_after->count() < 0) return std::nullopt;
  Millis least = 3 * keeper_margin(*kill_after);
  std::string kill_after_text =
      o.kill_after
          ? o.kill_after->text
          : "(default " + seconds_text(*kill_after) + " s, a tenth of the ttl)";
  // The same rule for each duration the keeper's deadline can come from.
  std::pair<std::string_view, const Duration*> limits[] = {
      {"ttl", &o.lease.ttl},
      {"max-hold", o.lease.max_hold ? &*o.lease.max_hold : nullptr}};
  for (const auto& [name, d] : limits) {
    if (!d || !d->millis || *d->millis > least) continue;
    return "--" + std::string(name) + " " + d->text +
           " leaves no room for --kill-after " + kill_after_text + ": the " +
           std::string(name) + " must be more than 3 x (kill-after + 250ms), " +
           "here " + seconds_text(least) + " s";
  }
  return std::nullopt;
}

}  // namespace dlock::cli
