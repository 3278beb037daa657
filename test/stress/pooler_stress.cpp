// A stress run through a transaction pooler (test/tap/009_pooler_stress.pl
// runs it behind PgBouncer with a pool of four server connections).
//
//   dlock_pooler_stress --pooler CONNINFO [--direct CONNINFO]
//                       [--threads 32] [--seconds 20] [--names 4]
//                       [--history DIR]
//
// Every thread has its own connection to the pooler and its own explicit
// owner, stress-<n>, and cycles until the time is up: Leases::acquire of a
// random one of the lease names pooler-stress-1 .. -<names>, polling
// (WaitMode::poll: a waiting acquire would keep one of the pool's server
// connections); dlock.fenced_update of that name's row in table
// pooler_stress (id <n>, columns value text and fence_token bigint) with
// the grant's token; Leases::renew; dlock.release. Each call is its own
// transaction, so each may run on another server backend. Every call is
// logged in the failure runs' history (test/history/history.h), a file per
// thread in DIR (a new temporary directory if not given), with the
// table's rows read before and after the run over --direct (the server
// itself; the pooler when not given). Once the threads have stopped, the
// history checker (test/history/checker.h) judges it, holding the run to
// its promises too (Expect: no fault injected, every cycle complete);
// `dlock_history_check --fault-free --cycles DIR` gives the same verdict.
//
// Prints the figures and the checker's report. Exit status: 0 when every
// rule held, 1 on a violation or a failed call, 2 when the run could not
// be set up. The history is removed when the run passes (unless DIR was
// given), and kept otherwise.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <dlock/lease.h>
#include <dlock/lease_errors.h>
#include <dlock/pq.h>
#include "checker.h"
#include "history.h"
#include "stress_support.h"

namespace pooler_stress {
namespace {

using Clock = std::chrono::steady_clock;
using dlock::client::Grant;
using dlock::client::Leases;
using dlock::client::Millis;
using dlock::client::Terms;
using dlock::client::WaitMode;
using dlock::history::Call;
using dlock::history::Log;
using dlock::history::Op;
using dlock::history::Outcome;

struct Options {
  std::string pooler;
  std::string direct;
  int threads = 32;
  int seconds = 20;
  int names = 4;
  std::string history;  // the directory of the history files
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

// What one client counted besides its history. Written only by its own
// thread.
struct ClientLog {
  std::int64_t cycles = 0;      // acknowledged grants
  std::int64_t busy_polls = 0;  // all of them, given-up acquires included
  std::int64_t busy_before_grants = 0;
  std::int64_t gave_up = 0;      // acquires still polling when time was up
  std::int64_t max_hold_us = 0;  // grant to release, server clock
  std::set<int> backends;        // backends that ran its writes and releases
  std::string fatal;             // why the client stopped early
};

// Completes op with the error a call threw: refused when the error says
// the grant is gone (not for a grant), unknown when the connection died with
// the call (it may have taken effect), failed otherwise.
void complete_error(Log& log, Op& op, const std::exception& e,
                    const dlock::pq::Connection& conn) {
  op.note = e.what();
  if (auto* pg = dynamic_cast<const dlock::pq::Error*>(&e)) {
    op.sqlstate = pg->sqlstate();
  }
  const bool refused =
      op.call != Call::grant && dlock::client::ends_grant(op.sqlstate);
  op.outcome = !conn.ok() ? Outcome::unknown
               : refused  ? Outcome::refused
                          : Outcome::failed;
  if (op.outcome != Outcome::unknown) log.complete(op);
}

// Logs one call: invoked, then `call` fills op in and returns its outcome;
// an exception completes it with the error.
void logged(Log& log, const dlock::pq::Connection& conn, Op op,
            const std::function<Outcome(Op&)>& call) {
  op = log.invoke(std::move(op));
  try {
    op.outcome = call(op);
  } catch (const std::exception& e) {
    complete_error(log, op, e, conn);
    return;
  }
  log.complete(op);
}

void run_client(const Options& opt, int index, Clock::time_point stop_at,
                stress::StartLine& start, ClientLog& counts) {
  const std::string owner = "stress-" + std::to_string(index);
  std::optional<Log> log;
  std::optional<dlock::pq::Connection> conn;
  try {
    log.emplace(opt.history + "/" + owner + ".jsonl", owner);
    conn.emplace(opt.pooler);
  } catch (const std::exception& e) {
    counts.fatal = std::string("starting: ") + e.what();
  }
  start.arrive_and_wait();
  if (!conn) return;

  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(1, opt.names);
  const Terms terms;  // ttl 30 s

  while (Clock::now() < stop_at) {
    if (!conn->ok()) {
      try {
        conn.emplace(opt.pooler);
      } catch (const std::exception& e) {
        counts.fatal = std::string("reconnecting: ") + e.what();
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
    g.call = Call::grant;
    g.ttl_ms = terms.ttl.count();
    g = log->invoke(g);
    std::optional<Grant> got;
    try {
      const auto left =
          std::chrono::duration_cast<Millis>(stop_at - Clock::now());
      got = leases.acquire(base.name, owner, terms, std::max(left, Millis(1)),
                           WaitMode::poll);
    } catch (const std::exception& e) {
      counts.busy_polls += leases.busy_polls();
      complete_error(*log, g, e, *conn);
      continue;
    }
    counts.busy_polls += leases.busy_polls();
    if (!got) {  // time is up: no cycle began
      g.outcome = Outcome::busy;
      log->complete(g);
      ++counts.gave_up;
      break;
    }
    g.outcome = Outcome::ok;
    g.token = got->token;
    g.acquired_us = got->acquired_at_us;
    g.expires_us = got->expires_at_us;
    log->complete(g);
    ++counts.cycles;
    counts.busy_before_grants += leases.busy_polls();
    const Grant& grant = *got;
    base.token = grant.token;

    Op w = base;
    w.call = Call::write;
    w.value = owner + "/" + std::to_string(grant.token);
    logged(*log, *conn, w, [&](Op& op) {
      dlock::pq::Result r = conn->exec(kWrite, grant.token, op.value, id);
      const std::int64_t rows = r.int64(0, 0);
      op.server_us = r.int64(0, 1);
      counts.backends.insert(static_cast<int>(r.int64(0, 2)));
      if (rows == 1) return Outcome::ok;
      op.note = "updated " + std::to_string(rows) + " rows";
      return Outcome::failed;
    });

    Op n = base;
    n.call = Call::renew;
    n.ttl_ms = terms.ttl.count();
    logged(*log, *conn, n, [&](Op& op) {
      Grant renewed = leases.renew(grant);
      op.acquired_us = renewed.acquired_at_us;
      op.expires_us = renewed.expires_at_us;
      if (renewed.token == grant.token) return Outcome::ok;
      op.note = "renewed token " + std::to_string(renewed.token);
      return Outcome::failed;
    });

    Op rel = base;
    rel.call = Call::release;
    logged(*log, *conn, rel, [&](Op& op) {
      dlock::pq::Result r = conn->exec(kRelease, op.name, grant.token, owner);
      op.server_us = r.int64(0, 1);
      counts.backends.insert(static_cast<int>(r.int64(0, 2)));
      if (!r.boolean(0, 0)) return Outcome::refused;
      counts.max_hold_us =
          std::max(counts.max_hold_us, op.server_us - grant.acquired_at_us);
      return Outcome::ok;
    });
  }
}

// The rows of lease names 1 .. names, read over conninfo: value and fence.
using Rows = std::map<std::string, std::pair<std::string, std::int64_t>>;
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

// Logs every name's row as call (initial_row or final_row); a missing row
// as a final_row that failed.
void record_rows(Log& log, Call call, const Rows& rows, int names) {
  for (int i = 1; i <= names; ++i) {
    Op op;
    op.call = call;
    op.name = lease_name(i);
    auto it = rows.find(op.name);
    op = log.invoke(op);
    if (it == rows.end()) {
      op.outcome = Outcome::failed;
      op.note = "the row is missing";
    } else {
      op.outcome = Outcome::ok;
      op.value = it->second.first;
      op.token = it->second.second;
    }
    log.complete(op);
  }
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
    } else if (arg == "--history") {
      opt.history = value;
    } else {
      return false;
    }
  }
  if (opt.direct.empty()) opt.direct = opt.pooler;
  return !opt.pooler.empty() && opt.threads > 0 && opt.seconds > 0 &&
         opt.names > 0;
}

int run(Options opt) {
  const bool temporary = opt.history.empty();
  if (temporary) {
    std::string dir =
        (std::filesystem::temp_directory_path() / "dlock-pooler-stress.XXXXXX")
            .string();
    if (mkdtemp(dir.data()) == nullptr) {
      std::cerr << "cannot make a directory for the history\n";
      return 2;
    }
    opt.history = dir;
  }
  std::optional<Log> rows_log;
  Rows before;
  try {
    std::filesystem::create_directories(opt.history);
    rows_log.emplace(opt.history + "/rows.jsonl", "rows");
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
  record_rows(*rows_log, Call::initial_row, before, opt.names);

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

  try {
    record_rows(*rows_log, Call::final_row, read_rows(opt.direct, opt.names),
                opt.names);
  } catch (const std::exception& e) {
    std::cerr << "reading table pooler_stress after the run: " << e.what()
              << "\n";
    return 1;
  }

  ClientLog all;
  std::int64_t fewest = INT64_MAX, most = 0;
  std::vector<std::string> fatal;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const ClientLog& l = logs[i];
    all.cycles += l.cycles;
    all.busy_polls += l.busy_polls;
    all.busy_before_grants += l.busy_before_grants;
    all.gave_up += l.gave_up;
    all.max_hold_us = std::max(all.max_hold_us, l.max_hold_us);
    all.backends.insert(l.backends.begin(), l.backends.end());
    fewest = std::min(fewest, l.cycles);
    most = std::max(most, l.cycles);
    if (!l.fatal.empty()) {
      fatal.push_back("stress-" + std::to_string(i + 1) + ": " + l.fatal);
    }
  }
  dlock::history::Verdict verdict;
  std::int64_t errors = 0;
  try {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(opt.history))
      if (entry.path().extension() == ".jsonl")
        files.push_back(entry.path().string());
    const std::vector<Op> history = dlock::history::read_files(files);
    // The run's own promises: no fault, and every cycle complete.
    verdict = dlock::history::check(history, {true, true});
    for (const Op& op : history)
      if (op.outcome != Outcome::ok && op.outcome != Outcome::busy) ++errors;
  } catch (const std::exception& e) {
    std::cerr << "reading the history in " << opt.history << ": " << e.what()
              << "\n";
    return 1;
  }

  std::cout << std::fixed << std::setprecision(1);
  std::cout << "threads: " << opt.threads << ", lease names: " << opt.names
            << "\n";
  std::cout << "cycles: " << all.cycles << " in " << seconds << " s ("
            << all.cycles / seconds << "/s); per thread " << fewest << " to "
            << most << "\n";
  std::cout << "poll retries: " << all.busy_polls << " ("
            << all.busy_before_grants << " before a grant)\n";
  std::cout << "clients still polling when time was up: " << all.gave_up
            << "\n";
  std::cout << "max hold: " << all.max_hold_us / 1000.0 << " ms\n";
  std::cout << "errors: " << errors + static_cast<std::int64_t>(fatal.size())
            << "\n";
  std::cout << "backends: " << all.backends.size() << " (pids";
  for (int pid : all.backends) std::cout << " " << pid;
  std::cout << ")\n";
  std::cout << "violations: " << verdict.figures.violations << "\n";
  std::cout << "history: " << report(verdict);
  for (const std::string& f : fatal)
    std::cout << "client stopped: " << f << "\n";
  if (all.cycles == 0) std::cout << "no cycle completed\n";
  const bool passed =
      verdict.figures.violations == 0 && fatal.empty() && all.cycles > 0;
  if (temporary && passed) {
    std::filesystem::remove_all(opt.history);
  } else if (!passed) {
    std::cout << "the history is kept in " << opt.history << "\n";
  }
  std::cout.flush();
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace pooler_stress

int main(int argc, char** argv) {
  pooler_stress::Options opt;
  if (!pooler_stress::parse(argc, argv, opt)) {
    std::cerr << "usage: " << argv[0]
              << " --pooler CONNINFO [--direct CONNINFO] [--threads N]"
                 " [--seconds N] [--names N] [--history DIR]\n";
    return 2;
  }
  return pooler_stress::run(opt);
}
