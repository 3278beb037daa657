#include "usage.h"

#include <cstdio>

namespace dlock::cli {

namespace {

constexpr std::string_view kDlockHelp =
    R"(Usage: dlock COMMAND [OPTION]... [ARG]...
Take, keep and give back dlock leases in the PostgreSQL database that libpq's
PG* environment variables (or --conn) name.

Commands:
  run NAME -- COMMAND [ARG]...  run COMMAND while holding lease NAME
  acquire NAME --ttl D          take lease NAME and print its token
  renew NAME TOKEN              renew a grant and print its validity (seconds)
  release NAME TOKEN            give a grant back
  status [NAME]...              show leases: state, owner, token, validity

Each command has its own --help, and man dlock has the full manual.
Durations: 500ms, 30s, 5m, 1h, 2d, runs of them largest unit first (1m30s),
or any PostgreSQL interval text ('90 seconds', '00:01:30'), which the server
reads; at most 100 years.

  -h, --help     show this help and exit
      --version  show the version and exit
)";

constexpr std::string_view kRunHelp =
    R"(Usage: dlock run [OPTION]... NAME [--] COMMAND [ARG]...
Take lease NAME, run COMMAND while it is held, give it back when COMMAND ends,
and exit with COMMAND's exit status. Options end at "--" or at COMMAND.
Processes COMMAND leaves in its process group get SIGTERM when it exits, and
SIGKILL after --kill-after; the lease is given back once they have ended.

A keeper renews the lease in the background. If the lease is lost (a renewal
is refused, it is force-released, or no renewal succeeds in time), COMMAND's
process group gets SIGTERM, then SIGKILL after --kill-after, and dlock exits
76. A watchdog process of dlock's does the same at the local deadline even
while dlock is stopped or hung, and kills COMMAND's whole group at once if
dlock itself is killed. SIGINT, SIGTERM and SIGHUP sent to dlock go to
COMMAND's process group; the lease is given back only once COMMAND has
ended. Until the lease is granted they end dlock as usual.

COMMAND runs in a process group of its own, with stdin, stdout and stderr
passed through, and the terminal handed to it when dlock runs in the
foreground of one. Its environment adds DLOCK_NAME, DLOCK_TOKEN (the fencing
token), DLOCK_OWNER and DLOCK_EXPIRES_AT (the grant's expiry at the start, the
server's timestamp).

Options:
      --ttl D           the lease's time to live, renewed while COMMAND runs
                          (default 30s)
      --wait D          wait up to D for a busy lease (default: do not wait)
      --owner O         the owner to hold it as (default: one of its own, new
                          for every run)
      --lock-delay D    after an expiry without release, nobody may take the
                          lease for D
      --max-hold D      never hold it longer than D after the grant (COMMAND
                          is stopped as when the lease is lost); more than
                          3 x (kill-after + 250ms), as the ttl
      --min-hold D      keep it taken until D after the grant even when
                          COMMAND ends sooner: run a job once per period
      --kill-after D    grace between SIGTERM and SIGKILL when the lease is
                          lost (default: a tenth of the ttl, at most 5s);
                          the ttl must be more than 3 x (kill-after + 250ms)
      --conflict-exit-code N  the exit status when the lease is busy
                          (default 75)
      --pooler          the connection goes through a transaction pooler:
                          wait by polling, and learn of a loss from renewals
                          only (no LISTEN)
      --conn CONNINFO   libpq connection string (default: PG* variables)
      --quiet           say nothing when the lease is busy
      --verbose         report the grant, renewals and the release on stderr
  -h, --help            show this help and exit

The keeper stops treating the lease as held 250ms + kill-after (and 1% of
the validity) before the server's expiry, so COMMAND is killed while the
lease is still valid.

Exit status: COMMAND's, or 128+N when a signal N killed it; 75 (or
--conflict-exit-code) if the lease is busy; 76 if it was lost; 2 for a usage
error; 125 if dlock failed (connection, SQL error); 126 if COMMAND cannot be
run; 127 if it is not found. If COMMAND ends and the release finds the lease
no longer held, dlock warns and exits with COMMAND's status.
)";

constexpr std::string_view kAcquireHelp =
    R"(Usage: dlock acquire [OPTION]... NAME --ttl D
Take lease NAME for D and print its fencing token. Renew it with dlock renew
and give it back with dlock release, from any process: NAME and the token
name the grant.

Options:
      --ttl D           the lease's time to live (required)
      --wait D          wait up to D for a busy lease (default: do not wait)
      --owner O         the owner to hold it as (default: one of its own, new
                          for every call, so that a second acquire of a held
                          lease finds it busy; give the same O to retry a
                          call whose answer was lost)
      --lock-delay D    after an expiry without release, nobody may take the
                          lease for D
      --max-hold D      never hold it longer than D after the grant
      --min-hold D      keep it taken until D after the grant even when
                          released sooner
      --conflict-exit-code N  the exit status when the lease is busy
                          (default 75)
      --pooler          the connection goes through a transaction pooler:
                          wait by polling
      --conn CONNINFO   libpq connection string (default: PG* variables)
      --quiet           say nothing when the lease is busy
      --verbose         report the grant on stderr
  -h, --help            show this help and exit

Exit status: 0 granted; 75 (or --conflict-exit-code) busy; 1 an error
("dlock: SQLSTATE: message"); 2 a usage error.
)";

constexpr std::string_view kRenewHelp =
    R"(Usage: dlock renew [OPTION]... NAME TOKEN
Renew the grant of lease NAME with TOKEN and print how long it is valid, in
seconds (29.998).

Options:
      --ttl D           the new time to live (default: the grant's own)
      --owner O         the grant's owner, which the server then checks
                          (default: not checked, the token names the grant)
      --conn CONNINFO   libpq connection string (default: PG* variables)
      --pooler, --quiet, --verbose  accepted, with no effect here (one option
                          set serves every dlock subcommand)
  -h, --help            show this help and exit

Exit status: 0 renewed; 1 an error, the lease not held with TOKEN among them
("dlock: LD002: ..."); 2 a usage error.
)";

constexpr std::string_view kReleaseHelp =
    R"(Usage: dlock release [OPTION]... NAME TOKEN
Give back the grant of lease NAME with TOKEN.

Options:
      --owner O         the grant's owner, which the server then checks
                          (default: not checked, the token names the grant)
      --conn CONNINFO   libpq connection string (default: PG* variables)
      --pooler, --quiet, --verbose  accepted, with no effect here (one option
                          set serves every dlock subcommand)
  -h, --help            show this help and exit

Exit status: 0 released; 1 if it was not held with TOKEN (by owner O, with
--owner), or an error; 2 a usage error.
)";

constexpr std::string_view kStatusHelp =
    R"(Usage: dlock status [OPTION]... [NAME]...
Show the leases NAME (default: all) from dlock.leases: name, state, owner,
token, validity left and time held (seconds, for held leases). Control
characters are shown escaped (\n, \t, \xNN). For scripts, query dlock.leases
with psql instead.

Options:
      --conn CONNINFO   libpq connection string (default: PG* variables)
      --pooler, --quiet, --verbose  accepted, with no effect here (one option
                          set serves every dlock subcommand)
  -h, --help            show this help and exit

Exit status: 0 shown; 1 a NAME with no lease ("dlock: no lease NAME"), or an
error; 2 a usage error.
)";

struct Topic {
  std::string_view name;
  std::string_view help;  // its first line is the synopsis
};

constexpr Topic kTopics[] = {
    {"", kDlockHelp},      {"run", kRunHelp},         {"acquire", kAcquireHelp},
    {"renew", kRenewHelp}, {"release", kReleaseHelp}, {"status", kStatusHelp},
};

const Topic& topic_of(std::string_view name) {
  for (const Topic& t : kTopics) {
    if (t.name == name) return t;
  }
  return kTopics[0];
}

}  // namespace

std::string_view help_text(std::string_view topic) {
  return topic_of(topic).help;
}

std::string usage_error_text(std::string_view topic,
                             const std::string& message) {
  const Topic& t = topic_of(topic);
  std::string_view synopsis = t.help.substr(0, t.help.find('\n') + 1);
  std::string command = "dlock";
  if (!t.name.empty()) command += " " + std::string(t.name);
  return "dlock: " + message + "\n" + std::string(synopsis) + "Try '" +
         command + " --help' for more information.\n";
}

int report_usage_error(std::string_view topic, const std::string& message) {
  std::fputs(usage_error_text(topic, message).c_str(), stderr);
  return kExitUsage;
}

}  // namespace dlock::cli
