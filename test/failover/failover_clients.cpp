// Clients that keep using dlock while test/failover/run.sh breaks the
// PostgreSQL cluster under them (Patroni and etcd: the primary killed,
// switched over, frozen; etcd stopped).
//
//   dlock_failover_clients --conninfo CONNINFO --dir DIR
//                          [--clients 4] [--names 3] [--ttl-ms 5000]
//                          [--stop-file PATH]
//
// CONNINFO names every node (host=a,b,c port=x,y,z
// target_session_attrs=read-write), so a reconnect finds the primary of
// the moment. Each client thread, owner failover-<n>, cycles on a random
// one of the names failover-1 .. failover-<names>: try_acquire, a fenced
// write of that name's row in table failover_rows (name text, value text,
// fence_token bigint) with the grant's token, renew, release. Every call
// is logged in DIR/client-<n>.jsonl (test/history/history.h); the rows as
// read before the clients start and after they stop go to DIR/rows.jsonl.
//
// A call whose answer never comes keeps its unknown outcome: the
// connection broke (the server was killed or shut down, a FATAL error), or
// no answer came within a minute (a frozen server), and then the
// connection is dropped without a cancel request: a cancelled wait for a
// synchronous standby would answer as if the commit had replicated. The
// client then connects again and begins a new cycle.
//
// It runs until SIGTERM or SIGINT, or until the stop file exists. Exit
// status: 0 when the rows were read before and after, 2 when the run
// could not be set up, 1 when the final rows could not be read.
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "history.h"
#include <dlock/lease.h>
#include <dlock/lease_errors.h>
#include <dlock/pq.h>

namespace failover {
namespace {

using Steady = std::chrono::steady_clock;
using dlock::client::Grant;
using dlock::client::Millis;
using dlock::client::Statement;
using dlock::client::Terms;
using dlock::history::Call;
using dlock::history::Log;
using dlock::history::Op;
using dlock::history::Outcome;

// How long a call may go unanswered before its connection is dropped.
constexpr auto kAnswerLimit = std::chrono::seconds(60);
// How long the rows may take to read, failovers included.
constexpr auto kRowsLimit = std::chrono::seconds(120);

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop.store(true); }

struct Options {
  std::string conninfo;
  std::string dir;
  std::string stop_file;
  int clients = 4;
  int names = 3;
  int ttl_ms = 5000;
};

std::string lease_name(int i) { return "failover-" + std::to_string(i); }

// The fenced write and the release, each with the server's clock read in
// the same statement after the call (a function in FROM runs before the
// select list).
constexpr char kFencedWrite[] =
    "SELECT w.n, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
    "  FROM dlock.fenced_update('failover_rows', $1::bigint,"
    "                           jsonb_build_object('value', $2::text),"
    "                           jsonb_build_object('name', $3::text)) AS w(n)";
constexpr char kReleaseAt[] =
    "SELECT r.done, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
    "  FROM dlock.release($1, $2::bigint, owner => $3) AS r(done)";
constexpr char kReadRows[] =
    "SELECT name, coalesce(value, ''), coalesce(fence_token, 0)"
    "  FROM failover_rows WHERE name LIKE 'failover-%' ORDER BY name";

bool stopping(const Options& opt) {
  if (g_stop.load()) return true;
  struct stat st;
  if (!opt.stop_file.empty() && ::stat(opt.stop_file.c_str(), &st) == 0) {
    g_stop.store(true);
  }
  return g_stop.load();
}

// One client's connection and log.
class Client {
 public:
  Client(const Options& opt, int index)
      : opt_(opt),
        owner_("failover-" + std::to_string(index)),
        log_(opt.dir + "/client-" + std::to_string(index) + ".jsonl",
             "client-" + std::to_string(index)),
        rng_(std::random_device{}()) {}

  void run() {
    std::uniform_int_distribution<int> pick(1, opt_.names);
    std::uniform_int_distribution<int> pause_ms(10, 50);
    while (!stopping(opt_)) {
      if (!connected()) continue;
      cycle(lease_name(pick(rng_)));
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng_)));
    }
  }

 private:
  // Connects when there is no connection; false while the cluster refuses.
  bool connected() {
    if (conn_ && conn_->ok()) return true;
    conn_.reset();
    try {
      conn_.emplace(opt_.conninfo);
      conn_->silence_notices();
      return true;
    } catch (const dlock::pq::Error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      return false;
    }
  }

  // Runs s and returns its answer: nullopt when none came (the op stays
  // unknown and the connection is dropped).
  std::optional<dlock::pq::Result> ask(const Statement& s) {
    const auto limit = Steady::now() + kAnswerLimit;
    std::optional<dlock::pq::Result> r = conn_->run_interruptible(
        s.sql, s.params, [&] { return Steady::now() < limit; });
    if (!r || !conn_->ok() ||
        (!r->ok() && dlock::client::is_connection_failure(r->sqlstate()))) {
      conn_.reset();
      return std::nullopt;
    }
    return r;
  }

  // Completes op with an error answer: refused when it says the token
  // does not hold, failed otherwise.
  void complete_error(Op& op, const dlock::pq::Result& r) {
    op.sqlstate = r.sqlstate();
    op.note = r.message();
    op.outcome = dlock::client::ends_grant(op.sqlstate) ? Outcome::refused
                                                        : Outcome::failed;
    log_.complete(op);
  }

  Op begin(Call call, const std::string& name, std::int64_t token) {
    Op op;
    op.call = call;
    op.name = name;
    op.owner = owner_;
    op.token = token;
    return op;
  }

  void cycle(const std::string& name) {
    Terms terms;
    terms.ttl = Millis(opt_.ttl_ms);
    Op g = begin(Call::grant, name, 0);
    g.ttl_ms = opt_.ttl_ms;
    g = log_.invoke(g);
    const auto r =
        ask(dlock::client::try_acquire_statement(name, owner_, terms));
    if (!r) return;
    if (!r->ok()) return complete_error(g, *r);
    const std::optional<Grant> got =
        dlock::client::read_grant(*r, dlock::client::BootClock::now());
    if (!got) {
      g.outcome = Outcome::busy;
      log_.complete(g);
      return;
    }
    g.outcome = Outcome::ok;
    g.token = got->token;
    g.acquired_us = got->acquired_at_us;
    g.expires_us = got->expires_at_us;
    log_.complete(g);
    if (write(*got) && renew(*got)) release(*got);
  }

  // Each returns false when the answer never came.
  bool write(const Grant& grant) {
    Op w = begin(Call::write, grant.name, grant.token);
    w.value = owner_ + "/" + std::to_string(++writes_);
    w = log_.invoke(w);
    const auto r =
        ask({kFencedWrite, {std::to_string(grant.token), w.value, grant.name}});
    if (!r) return false;
    if (!r->ok()) {
      complete_error(w, *r);
      return true;
    }
    const std::int64_t rows = r->int64(0, 0);
    w.server_us = r->int64(0, 1);
    w.outcome = rows == 1 ? Outcome::ok : Outcome::failed;
    if (rows != 1) w.note = "updated " + std::to_string(rows) + " rows";
    log_.complete(w);
    return true;
  }

  bool renew(const Grant& grant) {
    Op n = begin(Call::renew, grant.name, grant.token);
    n.ttl_ms = opt_.ttl_ms;
    n = log_.invoke(n);
    const auto r = ask(dlock::client::renew_statement(grant, std::nullopt));
    if (!r) return false;
    if (!r->ok()) {
      complete_error(n, *r);
      return true;
    }
    const std::optional<Grant> renewed =
        dlock::client::read_grant(*r, dlock::client::BootClock::now());
    if (!renewed || renewed->token != grant.token) {
      n.outcome = Outcome::failed;
      n.note = "renew answered another grant";
    } else {
      n.outcome = Outcome::ok;
      n.acquired_us = renewed->acquired_at_us;
      n.expires_us = renewed->expires_at_us;
    }
    log_.complete(n);
    return true;
  }

  bool release(const Grant& grant) {
    Op rel = begin(Call::release, grant.name, grant.token);
    rel = log_.invoke(rel);
    const auto r =
        ask({kReleaseAt, {grant.name, std::to_string(grant.token), owner_}});
    if (!r) return false;
    if (!r->ok()) {
      complete_error(rel, *r);
      return true;
    }
    rel.outcome = r->boolean(0, 0) ? Outcome::ok : Outcome::refused;
    rel.server_us = r->int64(0, 1);
    log_.complete(rel);
    return true;
  }

  const Options& opt_;
  const std::string owner_;
  Log log_;
  std::mt19937 rng_;
  std::optional<dlock::pq::Connection> conn_;
  std::int64_t writes_ = 0;
};

// The rows as the read-write primary has them, retried through failovers
// until kRowsLimit; nullopt if they could not be read.
std::optional<std::map<std::string, std::pair<std::string, std::int64_t>>>
read_rows(const Options& opt) {
  const auto limit = Steady::now() + kRowsLimit;
  for (;;) {
    try {
      dlock::pq::Connection c(opt.conninfo);
      dlock::pq::Result r = c.exec(kReadRows);
      std::map<std::string, std::pair<std::string, std::int64_t>> rows;
      for (int i = 0; i < r.rows(); ++i) {
        rows[r.value(i, 0)] = {r.value(i, 1), r.int64(i, 2)};
      }
      return rows;
    } catch (const dlock::pq::Error& e) {
      if (Steady::now() >= limit) {
        std::cerr << "reading failover_rows: " << e.what() << "\n";
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

// Logs every name's row as call (initial_row or final_row); false when
// the rows could not be read or some are missing.
bool record_rows(const Options& opt, Log& log, Call call) {
  const auto rows = read_rows(opt);
  if (!rows) return false;
  for (int i = 1; i <= opt.names; ++i) {
    const auto it = rows->find(lease_name(i));
    if (it == rows->end()) {
      std::cerr << "failover_rows has no row " << lease_name(i) << "\n";
      return false;
    }
    Op op;
    op.call = call;
    op.outcome = Outcome::ok;
    op.name = it->first;
    op.value = it->second.first;
    op.token = it->second.second;
    log.record(op);
  }
  return true;
}

bool parse(int argc, char** argv, Options& opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--conninfo") {
      opt.conninfo = value;
    } else if (arg == "--dir") {
      opt.dir = value;
    } else if (arg == "--stop-file") {
      opt.stop_file = value;
    } else if (arg == "--clients") {
      opt.clients = std::atoi(value.c_str());
    } else if (arg == "--names") {
      opt.names = std::atoi(value.c_str());
    } else if (arg == "--ttl-ms") {
      opt.ttl_ms = std::atoi(value.c_str());
    } else {
      return false;
    }
  }
  return !opt.conninfo.empty() && !opt.dir.empty() && opt.clients > 0 &&
         opt.names > 0 && opt.ttl_ms > 0;
}

int run(const Options& opt) {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  Log rows(opt.dir + "/rows.jsonl", "rows");
  if (!record_rows(opt, rows, Call::initial_row)) return 2;

  std::vector<std::thread> threads;
  for (int i = 1; i <= opt.clients; ++i) {
    threads.emplace_back([&opt, i] {
      try {
        Client(opt, i).run();
      } catch (const std::exception& e) {
        std::cerr << "client-" << i << ": " << e.what() << "\n";
        std::abort();  // a history with a hole must not be judged
      }
    });
  }
  for (std::thread& t : threads) t.join();

  return record_rows(opt, rows, Call::final_row) ? 0 : 1;
}

}  // namespace
}  // namespace failover

int main(int argc, char** argv) {
  failover::Options opt;
  if (!failover::parse(argc, argv, opt)) {
    std::cerr
        << "usage: dlock_failover_clients --conninfo CONNINFO --dir DIR"
           " [--clients N] [--names N] [--ttl-ms MS] [--stop-file PATH]\n";
    return 2;
  }
  try {
    return failover::run(opt);
  } catch (const std::exception& e) {
    std::cerr << "dlock_failover_clients: " << e.what() << "\n";
    return 2;
  }
}
