// A stress run through a transaction pooler (test/tap/009_pooler_stress.pl
// runs it behind PgBouncer with a pool of four server connections).
//
//   dlock_pooler_stress --pooler CONNINFO [--direct CONNINFO]
//                       [--threads 32] [--seconds 20] [--names 4]
//
// Every thread has its own connection to the pooler and its own explicit
// owner, stress-<n>, and cycles until the time is up: Leases::acquire of a
// random one of the lease names pooler-stress-1 .. -<names>, polling
// (WaitMode::poll: a waiting acquire would keep one of the pool's server
// connections); dlock.fenced_update of that name's row in table
// pooler_stress (id <n>, columns value text and fence_token bigint) with
// the grant's token; Leases::renew; dlock.release. Each call is its own
// transaction, so each may run on another server backend. Every call is
// logged (pooler_history.h), and the history is checked once the threads
// have stopped, with the table's rows read before and after the run over
// --direct (the server itself; the pooler when not given).
//
// Prints the figures and every violation with its operations. Exit status:
// 0 when every rule held, 1 on a violation or a failed call, 2 when the
// run could not be set up.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <dlock/lease.h>
#include <dlock/pq.h>
#include "pooler_history.h"
#include "stress_support.h"

namespace pooler_stress {
namespace {

using Clock = std::chrono::steady_clock;
using dlock::client::Grant;
using dlock::client::Leases;
using dlock::client::Millis;
using dlock::client::Terms;
using dlock::client::WaitMode;

// Violations printed in full; the rest are counted.
constexpr std::size_t kViolationsShown = 20;

struct Options {
  std::string pooler;
  std::string direct;
  int threads = 32;
  int seconds = 20;
  int names = 4;
};

std::string lease_name(int i) { return "pooler-stress-" + std::to_string(i); }

// The fenced write: the function in FROM runs before the select list, so
// the clock is read after it, in the same statement.
constexpr char kWrite[] =
    "SELECT f.rows,"
    "       (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,"
    "       pg_backend_pid()"
    "  FROM dlock.fenced_update('pooler_stress', $1::bigint,"
    "                           jsonb_build_object('value', $2::text),"
    "                           jsonb_build_object('id', $3::int)) AS f(rows)";
// The release, the clock read after it before it commits.
constexpr char kRelease[] =
    "SELECT r.released,"
    "       (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,"
    "       pg_backend_pid()"
    "  FROM dlock.release($1, $2::bigint, owner => $3) AS r(released)";
constexpr char kRows[] =
    "SELECT id, value, fence_token FROM pooler_stress"
    " WHERE id BETWEEN 1 AND $1 ORDER BY id";

// What one client did. Written only by its own thread.
struct ClientLog {
  std::vector<Op> ops;
  std::int64_t busy_polls = 0;  // all of them, given-up acquires included
  std::int64_t gave_up = 0;     // acquires still polling when time was up
  std::string fatal;            // why the client stopped early
};

void record_error(Op& op, const std::exception& e) {
  op.ok = false;
  if (auto* pg = dynamic_cast<const dlock::pq::Error*>(&e)) {
    op.sqlstate = pg->sqlstate();
  }
  op.error = e.what();
}

// Logs one call: `call` fills op in; an exception, the error.
void logged(ClientLog& log, Op op, const std::function<void(Op&)>& call) {
  try {
    call(op);
  } catch (const std::exception& e) {
    record_error(op, e);
  }
  log.ops.push_back(std::move(op));
}

void run_client(const Options& opt, int index, Clock::time_point stop_at,
                stress::StartLine& start, ClientLog& log) {
  std::optional<dlock::pq::Connection> conn;
  try {
    conn.emplace(opt.pooler);
  } catch (const std::exception& e) {
    log.fatal = std::string("connecting: ") + e.what();
  }
  start.arrive_and_wait();
  if (!conn) return;

  const std::string owner = "stress-" + std::to_string(index);
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(1, opt.names);
  const Terms terms;  // ttl 30 s

  while (Clock::now() < stop_at) {
    if (!conn->ok()) {
      try {
        conn.emplace(opt.pooler);
      } catch (const std::exception& e) {
        log.fatal = std::string("reconnecting: ") + e.what();
        return;
      }
    }
    // One per cycle: its busy_polls() counts this cycle's acquire.
    Leases leases(*conn);
    const int id = pick(rng);
    Op base;
    base.owner = owner;
    base.name = lease_name(id);

    Op g = base;
    g.kind = OpKind::grant;
    std::optional<Grant> got;
    bool failed = false;
    try {
      const auto left =
          std::chrono::duration_cast<Millis>(stop_at - Clock::now());
      got = leases.acquire(base.name, owner, terms, std::max(left, Millis(1)),
                           WaitMode::poll);
    } catch (const std::exception& e) {
      record_error(g, e);
      failed = true;
    }
    g.busy_polls = leases.busy_polls();
    log.busy_polls += leases.busy_polls();
    if (!got && !failed) {  // time is up: no cycle began
      ++log.gave_up;
      break;
    }
    if (got) {
      g.ok = true;
      g.token = got->token;
      g.acquired_us = got->acquired_at_us;
      g.expires_us = got->expires_at_us;
    }
    log.ops.push_back(g);
    if (!got) continue;
    const Grant& grant = *got;
    base.token = grant.token;

    Op w = base;
    w.kind = OpKind::write;
    w.value = owner + "/" + std::to_string(grant.token);
    logged(log, w, [&](Op& op) {
      dlock::pq::Result r = conn->exec(kWrite, grant.token, op.value, id);
      const std::int64_t rows = r.int64(0, 0);
      op.clock_us = r.int64(0, 1);
      op.backend_pid = static_cast<int>(r.int64(0, 2));
      op.ok = rows == 1;
      if (!op.ok) op.error = "updated " + std::to_string(rows) + " rows";
    });

    Op n = base;
    n.kind = OpKind::renew;
    logged(log, n, [&](Op& op) {
      Grant renewed = leases.renew(grant);
      op.ok = renewed.token == grant.token;
      if (!op.ok) op.error = "renewed token " + std::to_string(renewed.token);
      op.acquired_us = renewed.acquired_at_us;
      op.expires_us = renewed.expires_at_us;
    });

    Op rel = base;
    rel.kind = OpKind::release;
    logged(log, rel, [&](Op& op) {
      dlock::pq::Result r = conn->exec(kRelease, op.name, grant.token, owner);
      op.ok = r.boolean(0, 0);
      op.clock_us = r.int64(0, 1);
      op.backend_pid = static_cast<int>(r.int64(0, 2));
      if (!op.ok) op.error = "dlock.release returned false";
    });
  }
}

// The rows of lease names 1 .. names, read over conninfo.
Rows read_rows(const std::string& conninfo, int names) {
  dlock::pq::Connection c(conninfo);
  dlock::pq::Result r = c.exec(kRows, names);
  Rows rows;
  for (int i = 0; i < r.rows(); ++i) {
    rows[lease_name(static_cast<int>(r.int64(i, 0)))] = {r.value(i, 1),
                                                         r.int64(i, 2)};
  }
  return rows;
}

bool parse(int argc, char** argv, Options& opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--pooler") {
      opt.pooler = value;
    } else if (arg == "--direct") {
      opt.direct = value;
    } else if (arg == "--threads") {
      opt.threads = std::atoi(value.c_str());
    } else if (arg == "--seconds") {
      opt.seconds = std::atoi(value.c_str());
    } else if (arg == "--names") {
      opt.names = std::atoi(value.c_str());
    } else {
      return false;
    }
  }
  if (opt.direct.empty()) opt.direct = opt.pooler;
  return !opt.pooler.empty() && opt.threads > 0 && opt.seconds > 0 &&
         opt.names > 0;
}

int run(const Options& opt) {
  Rows before;
  try {
    before = read_rows(opt.direct, opt.names);
  } catch (const std::exception& e) {
    std::cerr << "reading table pooler_stress: " << e.what() << "\n";
    return 2;
  }
  if (before.size() != static_cast<std::size_t>(opt.names)) {
    std::cerr << "table pooler_stress needs rows with ids 1 to " << opt.names
              << ", it has " << before.size() << " of them\n";
    return 2;
  }

  std::vector<ClientLog> logs(opt.threads);
  stress::StartLine start(opt.threads);
  const auto began = Clock::now();
  const auto stop_at = began + std::chrono::seconds(opt.seconds);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < opt.threads; ++i) {
      threads.emplace_back(run_client, std::cref(opt), i + 1, stop_at,
                           std::ref(start), std::ref(logs[i]));
    }
    for (std::thread& t : threads) t.join();
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - began).count();

  Rows after;
  try {
    after = read_rows(opt.direct, opt.names);
  } catch (const std::exception& e) {
    std::cerr << "reading table pooler_stress after the run: " << e.what()
              << "\n";
    return 1;
  }

  std::vector<Op> history;
  std::int64_t busy_polls = 0, gave_up = 0;
  std::int64_t fewest = INT64_MAX, most = 0;
  std::vector<std::string> fatal;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const ClientLog& l = logs[i];
    history.insert(history.end(), l.ops.begin(), l.ops.end());
    busy_polls += l.busy_polls;
    gave_up += l.gave_up;
    const auto grants = std::count_if(
        l.ops.begin(), l.ops.end(),
        [](const Op& op) { return op.kind == OpKind::grant && op.ok; });
    fewest = std::min<std::int64_t>(fewest, grants);
    most = std::max<std::int64_t>(most, grants);
    if (!l.fatal.empty()) {
      fatal.push_back("stress-" + std::to_string(i + 1) + ": " + l.fatal);
    }
  }
  const std::vector<Violation> violations = check(history, before, after);
  const Summary s = summarize(history);

  std::cout << std::fixed << std::setprecision(1);
  std::cout << "threads: " << opt.threads << ", lease names: " << opt.names
            << "\n";
  std::cout << "cycles: " << s.cycles << " in " << seconds << " s ("
            << s.cycles / seconds << "/s); per thread " << fewest << " to "
            << most << "\n";
  std::cout << "poll retries: " << busy_polls << " (" << s.busy_polls
            << " before a grant)\n";
  std::cout << "clients still polling when time was up: " << gave_up << "\n";
  std::cout << "max hold: " << s.max_hold_us / 1000.0 << " ms\n";
  std::cout << "errors: " << s.errors + static_cast<std::int64_t>(fatal.size())
            << "\n";
  std::cout << "backends: " << s.backends.size() << " (pids";
  for (int pid : s.backends) std::cout << " " << pid;
  std::cout << ")\n";
  std::cout << "violations: " << violations.size() << std::endl;

  for (const std::string& f : fatal)
    std::cout << "client stopped: " << f << "\n";
  for (std::size_t i = 0; i < violations.size() && i < kViolationsShown; ++i) {
    std::cout << "VIOLATION: " << violations[i].what << "\n";
    for (const Op& op : violations[i].ops) {
      std::cout << "  " << describe(op) << "\n";
    }
  }
  if (violations.size() > kViolationsShown) {
    std::cout << "... and " << violations.size() - kViolationsShown
              << " more violations\n";
  }
  if (s.cycles == 0) std::cout << "no cycle completed\n";
  std::cout.flush();
  return violations.empty() && fatal.empty() && s.cycles > 0 ? 0 : 1;
}

}  // namespace
}  // namespace pooler_stress

int main(int argc, char** argv) {
  pooler_stress::Options opt;
  if (!pooler_stress::parse(argc, argv, opt)) {
    std::cerr << "usage: " << argv[0]
              << " --pooler CONNINFO [--direct CONNINFO] [--threads N]"
                 " [--seconds N] [--names N]\n";
    return 2;
  }
  return pooler_stress::run(opt);
}
