// dlock run: take the lease, keep it with a client::Keeper while COMMAND
// runs (child.h), release it once COMMAND has ended.
//
// The signal pipe is set up only once the lease is granted: until then
// SIGINT, SIGTERM and SIGHUP end dlock as usual (a waiting acquire ends
// with its client). From then on they go to COMMAND, and the lease is
// released only after COMMAND has ended. A lost lease is not released:
// the keeper found it refused, ended or past its local deadline, or the
// watchdog, which enforces that deadline even while dlock is stopped,
// fired or ended.
#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "child.h"
#include "commands.h"
#include "guarded.h"
#include <dlock/application_name.h>
#include <dlock/keeper.h>
#include <dlock/lease.h>
#include <dlock/lease_errors.h>
#include "lease_request.h"
#include "messages.h"
#include "server_durations.h"
#include "signal_pipe.h"
#include "usage.h"
#include "watchdog.h"

namespace dlock::cli {

namespace {

// COMMAND's view of the grant, as it was at the start.
std::vector<std::pair<std::string, std::string>> lease_environment(
    const client::Grant& g) {
  return {{"DLOCK_NAME", g.name},
          {"DLOCK_TOKEN", std::to_string(g.token)},
          {"DLOCK_OWNER", g.owner},
          {"DLOCK_EXPIRES_AT", g.expires_at}};
}

// How dlock run's sessions show in pg_stat_activity (application_name.h):
// the one that waits for the lease and releases it, and the keeper's.
std::string session_name(const RunOptions& o, const std::string& owner) {
  return client::application_name("dlock run", o.lease.name, owner);
}
std::string keeper_session_name(const RunOptions& o, const std::string& owner) {
  return client::application_name("dlock keeper", o.lease.name, owner);
}

// Releases the grant once COMMAND has ended on its own. A lease found no
// longer held, or a release that fails, only gets a warning: COMMAND's
// work is done, and its status is dlock's.
void release_after_command(const RunOptions& o, client::Leases& leases,
                           const client::Grant& g) {
  std::string lease =
      "lease " + g.name + " (token " + std::to_string(g.token) + ")";
  try {
    bool released;
    try {
      released = leases.release(g);
    } catch (const client::ConnectionLost&) {
      // The connection sat idle while COMMAND ran; the server or a pooler
      // may have closed it. One try on a new one.
      pq::Connection again(o.lease.conninfo, session_name(o, g.owner));
      client::Leases fresh(again);
      released = fresh.release(g);
    }
    if (!released) {
      say("warning: " + lease + " was no longer held when COMMAND ended");
    } else if (o.lease.verbosity == Verbosity::verbose) {
      say(lease + " released");
    }
  } catch (const pq::Error& e) {
    say("warning: could not release " + lease + ": " + error_text(e) +
        "; it ends at its expiry");
  }
}

client::KeeperOptions keeper_options(const RunOptions& o,
                                     const client::Grant& g) {
  client::KeeperOptions k;
  k.conninfo = o.lease.conninfo;
  k.application_name = keeper_session_name(o, g.owner);
  k.policy.fixed_margin = keeper_margin(kill_after_of(o).value());
  k.behind_pooler = o.lease.pooler;
  if (o.lease.verbosity == Verbosity::verbose) {
    k.on_renewed = [](const client::Grant& g) {
      say("lease " + g.name + " renewed: valid for " +
          seconds_text(g.valid_for) + " s");
    };
  }
  return k;
}

// Why the lease is lost, once it is: the keeper's reason, or the
// watchdog's (watchdog.h).
std::optional<std::string> loss(const client::Keeper& keeper,
                                Watchdog& watchdog) {
  if (keeper.lost()) return keeper.why();
  std::optional<std::string> failure = watchdog.failure();
  if (!failure) return std::nullopt;
  if (watchdog.fired() && client::BootClock::now() >= keeper.deadline()) {
    // It fired at the keeper's deadline (dlock was stopped), which the
    // keeper looks at at least every 50 ms: its reason says more.
    for (int i = 0; i < 100 && !keeper.lost(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (keeper.lost()) return keeper.why();
  }
  return failure;
}

// COMMAND under the lease, from the grant to the release.
int run_holding(const RunOptions& o, client::Leases& leases,
                const client::Grant& grant) {
  // Forked before the keeper's thread starts, and before the signal pipe:
  // it keeps the signal dispositions dlock was started with.
  Watchdog watchdog(kill_after_of(o).value());
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP});
  client::Keeper keeper(grant, keeper_options(o, grant));
  Command command{o.command, lease_environment(grant),
                  in_terminal_foreground()};
  std::variant<Child, SpawnFailure> spawned =
      Child::spawn(command, signals, &watchdog, keeper.deadline());
  if (auto* failure = std::get_if<SpawnFailure>(&spawned)) {
    keeper.stop();
    say(failure->message);
    release_after_command(o, leases, keeper.grant());
    return failure->exit_code;
  }
  pid_t group = std::get<Child>(spawned).pid();
  bool told = false;
  Ending end = std::get<Child>(spawned).wait(
      signals,
      [&] {
        std::optional<std::string> why = loss(keeper, watchdog);
        if (!why) {
          // Each new local deadline, to the watchdog.
          watchdog.watch(group, keeper.deadline());
          return false;
        }
        if (!told) say("lease " + grant.name + " lost: " + *why);
        told = true;
        return true;
      },
      kill_after_of(o).value());
  keeper.stop();
  if (end.lost_while_running) return kExitLost;
  release_after_command(o, leases, keeper.grant());
  return end.exit_code;
}

}  // namespace

int run_command(RunOptions& o) {
  return guarded(kExitRunFailed, [&] {
    std::string owner = o.lease.owner.value_or(client::default_owner());
    pq::Connection conn(o.lease.conninfo, session_name(o, owner));
    std::optional<std::string> error = read_durations(conn, duration_fields(o));
    if (!error) error = check_kill_after(o);
    if (error) return report_usage_error("run", *error);
    client::Leases leases(conn);
    std::optional<client::Grant> grant = take_lease(leases, o.lease, owner);
    if (!grant) return busy(o.lease);
    report_grant(o.lease, *grant);
    try {
      return run_holding(o, leases, *grant);
    } catch (...) {
      // dlock failed before COMMAND could run (or while watching it, which
      // kills it): give the lease back if the server can be told.
      try {
        leases.release(*grant);
      } catch (...) {
      }
      throw;
    }
  });
}

}  // namespace dlock::cli
