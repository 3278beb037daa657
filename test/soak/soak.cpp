// dlock_soak: a randomized fault soak against the server in PGHOST/PGPORT.
//
// N client processes, forked so that each can be killed or frozen on its
// own, take, renew, release and force-release leases on a few names with
// short ttls, write the names' rows through fencing, and sweep; each logs
// every call to a history file of its own (test/history/history.h). This
// process meanwhile injects faults: it kills clients with SIGKILL (and
// starts them again as new incarnations, with new owners and files),
// terminates their server backends, freezes a client past the longest ttl
// and lets it go on with its stale grants, stops the server with
// `pg_ctl stop -m immediate` and starts it again, and checkpoints. At the
// end it stops everything, reads the rows into the history (final_row) and
// prints what was done: calls by outcome, faults by kind. The history is
// then judged by dlock_history_check (test/history/checker.h).
//
// The rows (table soak_rows) are written only under a lease, and always
// fenced: with dlock.fenced_update, or in one transaction with
// dlock.assert_held and an UPDATE that sets the fence column, which
// dlock.protect's trigger guards as well. A third of the client sessions
// run with synchronous_commit = off: dlock must keep their grants and
// renewals durable anyway. Their writes of the rows are the user's own, and
// the history counts an acknowledged write as kept, so every write
// statement sets synchronous_commit = on for its own transaction.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "forked_workers.h"
#include "history.h"
#include <dlock/lease.h>
#include <dlock/lease_errors.h>
#include <dlock/pq.h>

namespace {

using dlock::client::Grant;
using dlock::client::Leases;
using dlock::client::Millis;
using dlock::client::Terms;
using dlock::history::Call;
using dlock::history::Log;
using dlock::history::Op;
using dlock::history::Outcome;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr char kTable[] = "soak_rows";
// TTLs of grants and renewals, milliseconds.
constexpr int kTtlMinMs = 100;
constexpr int kTtlMaxMs = 2'000;
// A frozen client stays frozen this long: past the longest ttl (and a
// grant's unknown outcome is waited out as long).
constexpr auto kFreezeFor = milliseconds(kTtlMaxMs + 500);
// acquire()'s timeouts, milliseconds.
constexpr int kWaitMinMs = 20;
constexpr int kWaitMaxMs = 300;
// A stale token a client keeps to try again later.
constexpr std::size_t kStaleKept = 8;
constexpr int kMaxClients = 64;
// A client that cannot reach the server for this long gives up.
constexpr auto kReconnectFor = milliseconds(120'000);

// ------------------------------------------------------------------ options

struct Options {
  std::string dir;  // history files
  int clients = 8;
  int names = 4;
  std::int64_t seconds = 60;  // 0: no limit
  std::int64_t ops = 0;       // stop at this many calls; 0: no limit
  std::uint64_t seed = 0;     // 0: drawn
  // Server restarts: all three, or none (no restarts).
  std::string pgdata, pg_ctl, server_log;
  std::string server_user;   // run pg_ctl as this user (runuser)
  int restart_every_s = 12;  // on average
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "dlock_soak: " << why << "\n"
            << "usage: dlock_soak --dir DIR [--clients N] [--names N]"
               " [--seconds N] [--ops N] [--seed N]\n"
               "       [--pgdata DIR --pg-ctl PATH --server-log FILE"
               " [--server-user USER] [--restart-every SECONDS]]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> std::int64_t {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 0) usage(a + ": not a count: " + v);
      return n;
    };
    if (a == "--dir")
      o.dir = value();
    else if (a == "--clients")
      o.clients = static_cast<int>(number());
    else if (a == "--names")
      o.names = static_cast<int>(number());
    else if (a == "--seconds")
      o.seconds = number();
    else if (a == "--ops")
      o.ops = number();
    else if (a == "--seed")
      o.seed = static_cast<std::uint64_t>(number());
    else if (a == "--pgdata")
      o.pgdata = value();
    else if (a == "--pg-ctl")
      o.pg_ctl = value();
    else if (a == "--server-log")
      o.server_log = value();
    else if (a == "--server-user")
      o.server_user = value();
    else if (a == "--restart-every")
      o.restart_every_s = static_cast<int>(number());
    else
      usage("unknown argument " + a);
  }
  if (o.dir.empty()) usage("--dir is required");
  if (o.clients < 1 || o.clients > kMaxClients)
    usage("--clients: 1 to " + std::to_string(kMaxClients));
  if (o.names < 1 || o.names > 100) usage("--names: 1 to 100");
  if (o.seconds == 0 && o.ops == 0) usage("--seconds 0 needs --ops");
  const bool restarts =
      !o.pgdata.empty() || !o.pg_ctl.empty() || !o.server_log.empty();
  if (restarts &&
      (o.pgdata.empty() || o.pg_ctl.empty() || o.server_log.empty()))
    usage("--pgdata, --pg-ctl and --server-log go together");
  if (o.restart_every_s < 1) usage("--restart-every: at least 1");
  return o;
}

std::string lease_name(int i) { return "soak-" + std::to_string(i); }

// Set by SIGINT or SIGTERM: the run stops as if its time were up.
volatile std::sig_atomic_t g_interrupted = 0;

// ------------------------------------------------------------------ shared

// What every client incarnation adds to, in memory shared with this
// process (lock-free atomics only).
struct Shared {
  std::atomic<std::int64_t> calls{0};   // history calls invoked
  std::atomic<std::int64_t> sweeps{0};  // dlock.sweep() calls answered
  std::atomic<std::int64_t> swept{0};   // rows they deleted
  std::atomic<std::int64_t> reconnects{0};
  // Writes with the grants held before a pause past every ttl: refused,
  // or accepted (no newer holder had written the row).
  std::atomic<std::int64_t> late_writes_refused{0};
  std::atomic<std::int64_t> late_writes_accepted{0};
  // How many grants each client (by index from 1) thinks it holds, so
  // that freezes hit holders.
  std::atomic<int> holding[kMaxClients + 1] = {};
};

// ------------------------------------------------------------------ client

// One incarnation of one client: its connection, its grants, its log.
class Client {
 public:
  Client(const Options& o, Shared& shared, int index, int incarnation,
         bool async_commit, std::uint64_t seed)
      : o_(o),
        shared_(shared),
        index_(index),
        name_("c" + std::to_string(index) + "." + std::to_string(incarnation)),
        owner_("soak-" + name_),
        async_commit_(async_commit),
        log_(o.dir + "/client-" + std::to_string(index) + "-" +
                 std::to_string(incarnation) + ".jsonl",
             name_),
        rng_(seed) {}

  void run() {
    while (!forked::stop_requested()) {
      if (!conn_ && !connect()) return;
      const auto began = Clock::now();
      shared_.holding[index_] = static_cast<int>(held_.size());
      step();
      // Frozen past every ttl (or the server was down, or a lock waited,
      // that long): write with each grant it thinks it holds, as a paused
      // process would.
      if (Clock::now() - began > milliseconds(kTtlMaxMs)) write_after_freeze();
    }
  }

 private:
  // Connects, retrying while the server restarts; false if asked to stop.
  bool connect() {
    const auto give_up = Clock::now() + kReconnectFor;
    while (!forked::stop_requested()) {
      try {
        dlock::pq::Connection c("application_name=soak-" + name_);
        c.silence_notices();
        c.exec("SET statement_timeout = '20s'");
        if (async_commit_) c.exec("SET synchronous_commit = off");
        conn_.emplace(std::move(c));
        return true;
      } catch (const dlock::pq::Error& e) {
        if (Clock::now() > give_up)
          throw std::runtime_error("cannot reconnect: " +
                                   std::string(e.what()));
        std::this_thread::sleep_for(milliseconds(100));
      }
    }
    return false;
  }

  void complete(Op& op) {
    log_.complete(op);
    last_ = op.outcome;
  }

  // The connection died before the answer: the op stays unknown.
  void lost() {
    last_ = Outcome::unknown;
    conn_.reset();
    ++shared_.reconnects;
  }
  bool is_lost(const std::string& sqlstate) const {
    return dlock::client::is_connection_failure(sqlstate) || !conn_->ok();
  }

  int uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  bool chance(double p) {
    return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  std::string any_name() { return lease_name(uniform(0, o_.names - 1)); }

  Op invoke(Call call, const std::string& name, std::int64_t token,
            std::int64_t ttl_ms = 0, std::string value = "") {
    Op op;
    op.call = call;
    op.name = name;
    op.owner = owner_;
    op.token = token;
    op.ttl_ms = ttl_ms;
    op.value = std::move(value);
    ++shared_.calls;
    return log_.invoke(op);
  }

  // An answer to a call, other than a connection's failure.
  void answer_error(Op& op, const std::string& sqlstate,
                    const std::string& message) {
    op.outcome = dlock::client::ends_grant(sqlstate) ? Outcome::refused
                                                     : Outcome::failed;
    op.sqlstate = sqlstate;
    op.note = message;
    complete(op);
  }

  void forget(const std::string& name) {
    auto it = held_.find(name);
    if (it == held_.end()) return;
    stale_.push_back(it->second);
    if (stale_.size() > kStaleKept) stale_.erase(stale_.begin());
    held_.erase(it);
  }

  void write_after_freeze() {
    const std::map<std::string, Grant> held = held_;
    for (const auto& [name, g] : held) {
      if (!conn_) return;
      if (chance(0.5))
        fenced_write(g);
      else
        asserted_write(g);
      if (last_ == Outcome::ok) ++shared_.late_writes_accepted;
      if (last_ == Outcome::refused) ++shared_.late_writes_refused;
    }
  }

  // One random call.
  void step() {
    if (!held_.empty() && chance(0.75)) {
      auto it = held_.begin();
      std::advance(it, uniform(0, static_cast<int>(held_.size()) - 1));
      const Grant g = it->second;
      const int r = uniform(0, 99);
      if (r < 35) return fenced_write(g);
      if (r < 60) return asserted_write(g);
      if (r < 80) return renew(g);
      if (r < 95) return release(g);
      return forget(g.name);  // walk away: it expires
    }
    const int r = uniform(0, 99);
    if (r < 35) return grant(false);
    if (r < 70) return grant(true);
    if (r < 85 && !stale_.empty()) {
      const Grant g = stale_[uniform(0, static_cast<int>(stale_.size()) - 1)];
      const int s = uniform(0, 3);
      if (s == 0) return fenced_write(g);
      if (s == 1) return asserted_write(g);
      if (s == 2) return renew(g);
      return release(g);
    }
    if (r < 95) return force_release();
    return sweep();
  }

  void grant(bool wait) {
    const std::string name = any_name();
    // After a grant whose answer was lost, the name may be held with a
    // token this client never saw: asking again would get that token
    // back, older than tokens granted since. Leave it until it expired.
    auto shun = shunned_.find(name);
    if (shun != shunned_.end()) {
      if (Clock::now() < shun->second) return;
      shunned_.erase(shun);
    }
    Terms terms;
    terms.ttl = Millis(uniform(kTtlMinMs, kTtlMaxMs));
    const Millis timeout(uniform(kWaitMinMs, kWaitMaxMs));
    Op op = invoke(Call::grant, name, 0, terms.ttl.count());
    op.note = wait ? "acquire" : "try_acquire";
    Leases leases(*conn_);
    std::optional<Grant> g;
    try {
      g = wait ? leases.acquire(name, owner_, terms, timeout)
               : leases.try_acquire(name, owner_, terms);
    } catch (const dlock::pq::Error& e) {
      if (is_lost(e.sqlstate())) {
        shunned_[name] = Clock::now() + kFreezeFor;
        return lost();
      }
      return answer_error(op, e.sqlstate(), e.what());
    }
    if (g) {
      op.outcome = Outcome::ok;
      op.token = g->token;
      op.acquired_us = g->acquired_at_us;
      op.expires_us = g->expires_at_us;
      held_[name] = *g;
    } else {
      op.outcome = Outcome::busy;
    }
    complete(op);
  }

  void renew(const Grant& g) {
    const std::int64_t ttl = uniform(kTtlMinMs, kTtlMaxMs);
    Op op = invoke(Call::renew, g.name, g.token, ttl);
    Leases leases(*conn_);
    try {
      const Grant r = leases.renew(g, Millis(ttl));
      op.outcome = Outcome::ok;
      op.acquired_us = r.acquired_at_us;
      op.expires_us = r.expires_at_us;
      if (held_.count(g.name) && held_[g.name].token == g.token)
        held_[g.name] = r;
      complete(op);
    } catch (const dlock::pq::Error& e) {
      if (is_lost(e.sqlstate())) return lost();
      if (dlock::client::ends_grant(e.sqlstate())) forget(g.name);
      answer_error(op, e.sqlstate(), e.what());
    }
  }

  void release(const Grant& g) {
    Op op = invoke(Call::release, g.name, g.token);
    dlock::pq::Result r = conn_->try_exec(
        "SELECT released, (extract(epoch FROM clock_timestamp()) * 1000000)"
        "::bigint FROM (SELECT dlock.release($1, $2::bigint, $3) AS released"
        " OFFSET 0) r",
        g.name, g.token, owner_);
    if (!r.ok()) {
      if (is_lost(r.sqlstate())) return lost();
      return answer_error(op, r.sqlstate(), r.message());
    }
    if (held_.count(g.name) && held_[g.name].token == g.token)
      held_.erase(g.name);
    op.outcome = r.boolean(0, 0) ? Outcome::ok : Outcome::refused;
    op.server_us = r.int64(0, 1);
    complete(op);
  }

  std::string next_value() { return name_ + "/" + std::to_string(++writes_); }

  // dlock.fenced_update of the name's row.
  void fenced_write(const Grant& g) {
    Op op = invoke(Call::write, g.name, g.token, 0, next_value());
    op.note = "fenced_update";
    dlock::pq::Result r = conn_->try_exec(
        "SELECT n, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
        " FROM (SELECT set_config('synchronous_commit', 'on', true),"
        "              dlock.fenced_update('soak_rows', $1::bigint,"
        "                jsonb_build_object('value', $2::text),"
        "                jsonb_build_object('name', $3::text)) AS n"
        "       OFFSET 0) w",
        g.token, op.value, g.name);
    if (!r.ok()) {
      if (is_lost(r.sqlstate())) return lost();
      if (r.sqlstate() == "LD001" || r.sqlstate() == "LD003") forget(g.name);
      return answer_error(op, r.sqlstate(), r.message());
    }
    op.server_us = r.int64(0, 1);
    if (r.int64(0, 0) == 1) {
      op.outcome = Outcome::ok;
    } else {
      op.outcome = Outcome::failed;
      op.note = "fenced_update updated " + r.value(0, 0) + " rows";
    }
    complete(op);
  }

  // BEGIN; dlock.assert_held; UPDATE setting the fence; COMMIT.
  void asserted_write(const Grant& g) {
    Op op = invoke(Call::write, g.name, g.token, 0, next_value());
    op.note = "assert_held";
    // A failed statement before COMMIT: roll back, answer.
    auto refuse = [&](const dlock::pq::Result& r) {
      if (is_lost(r.sqlstate())) return lost();
      dlock::pq::Result rb = conn_->try_exec("ROLLBACK");
      if (!rb.ok() && is_lost(rb.sqlstate())) {
        // The transaction died with the connection: it did not commit.
        conn_.reset();
        ++shared_.reconnects;
      }
      if (dlock::client::ends_grant(r.sqlstate())) forget(g.name);
      answer_error(op, r.sqlstate(), r.message());
    };
    dlock::pq::Result r = conn_->try_exec("BEGIN");
    if (!r.ok()) return refuse(r);
    r = conn_->try_exec(
        "SELECT set_config('synchronous_commit', 'on', true),"
        " dlock.assert_held($1, $2::bigint)",
        g.name, g.token);
    if (!r.ok()) return refuse(r);
    r = conn_->try_exec(
        "UPDATE soak_rows SET value = $1, fence_token = $2::bigint"
        " WHERE name = $3"
        " RETURNING (extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
        op.value, g.token, g.name);
    if (!r.ok()) return refuse(r);
    if (r.rows() != 1) {
      conn_->try_exec("ROLLBACK");
      op.outcome = Outcome::failed;
      op.note = "the UPDATE matched " + std::to_string(r.rows()) + " rows";
      return complete(op);
    }
    op.server_us = r.int64(0, 0);
    r = conn_->try_exec("COMMIT");
    if (!r.ok()) {
      if (is_lost(r.sqlstate())) return lost();
      return answer_error(op, r.sqlstate(), r.message());
    }
    op.outcome = Outcome::ok;
    complete(op);
  }

  void force_release() {
    Op op = invoke(Call::force_release, any_name(), 0);
    dlock::pq::Result r = conn_->try_exec(
        "SELECT (f).token, (extract(epoch FROM clock_timestamp()) * 1000000)"
        "::bigint FROM (SELECT dlock.force_release($1, $2) AS f OFFSET 0) f",
        op.name, "soak " + name_);
    if (!r.ok()) {
      if (is_lost(r.sqlstate())) return lost();
      return answer_error(op, r.sqlstate(), r.message());
    }
    op.outcome = Outcome::ok;
    op.server_us = r.int64(0, 1);
    op.note = r.isnull(0, 0) ? "ended none" : "ended token " + r.value(0, 0);
    if (!r.isnull(0, 0) && held_.count(op.name) &&
        held_[op.name].token == r.int64(0, 0))
      forget(op.name);
    complete(op);
  }

  // Not a history call: it deletes rows of leases already over.
  void sweep() {
    dlock::pq::Result r = conn_->try_exec(
        "SELECT dlock.sweep(make_interval(secs => $1::int / 1000.0))",
        chance(0.5) ? 0 : uniform(1, kTtlMaxMs));
    if (!r.ok()) {
      if (is_lost(r.sqlstate())) return lost();
      throw std::runtime_error("dlock.sweep failed: " + r.error());
    }
    ++shared_.sweeps;
    shared_.swept += r.int64(0, 0);
  }

  const Options& o_;
  Shared& shared_;
  const int index_;
  const std::string name_;
  const std::string owner_;
  const bool async_commit_;
  Log log_;
  std::mt19937_64 rng_;
  std::optional<dlock::pq::Connection> conn_;
  std::map<std::string, Grant> held_;
  std::vector<Grant> stale_;
  std::map<std::string, Clock::time_point> shunned_;  // name -> until
  std::int64_t writes_ = 0;
  Outcome last_ = Outcome::unknown;  // of the last call answered or lost
};

// ------------------------------------------------------------------ harness

// Runs a program, its output dropped, and waits for it; its exit status.
int run_program(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY,
                                   0);
  pid_t pid = 0;
  const int failed =
      posix_spawnp(&pid, argv[0], &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (failed) throw std::runtime_error("cannot start " + args[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  return status;
}

// One client slot: its current incarnation.
struct Slot {
  int incarnation = 0;
  std::unique_ptr<forked::Workers> worker;  // one worker
  Clock::time_point frozen_until{};         // if paused
  bool paused = false;
};

class Harness {
 public:
  explicit Harness(const Options& o)
      : o_(o), rng_(o.seed), slots_(static_cast<std::size_t>(o.clients)) {}

  int run() {
    prepare();
    record_rows(Call::initial_row);
    for (int i = 0; i < o_.clients; ++i) start(i);
    const auto began = Clock::now();
    auto next_fault = began + milliseconds(uniform(100, 800));
    auto next_restart =
        began + milliseconds(uniform(o_.restart_every_s * 500,
                                     o_.restart_every_s * 1500));
    std::int64_t reported = 0;
    while (!finished(began)) {
      std::this_thread::sleep_for(milliseconds(20));
      const auto now = Clock::now();
      for (int i = 0; i < o_.clients; ++i) {
        Slot& s = slots_[i];
        if (s.paused && now >= s.frozen_until) {
          s.worker->resume(0);
          s.paused = false;
        }
        if (!s.paused && !alive(i)) restart_failed(i);
      }
      if (now >= next_fault) {
        fault();
        next_fault = Clock::now() + milliseconds(uniform(100, 800));
      }
      if (!o_.pgdata.empty() && now >= next_restart) {
        restart_server();
        next_restart =
            Clock::now() + milliseconds(uniform(o_.restart_every_s * 500,
                                                o_.restart_every_s * 1500));
      }
      const std::int64_t calls = shared_->calls;
      if (calls / 100'000 > reported) {
        reported = calls / 100'000;
        std::cerr << "dlock_soak: " << calls << " calls after "
                  << seconds_since(began) << " s\n";
      }
    }
    const double ran = seconds_since(began);
    if (g_interrupted) std::cerr << "dlock_soak: interrupted, stopping\n";
    bool stopped = true;
    for (Slot& s : slots_) {
      s.paused = false;
      if (!s.worker->stop_all(milliseconds(20'000))) stopped = false;
    }
    record_rows(Call::final_row);
    report(ran);
    if (!stopped) std::cerr << "dlock_soak: a client did not stop in time\n";
    if (client_errors_ > 0)
      std::cerr << "dlock_soak: " << client_errors_ << " client errors\n";
    return stopped && client_errors_ == 0 ? 0 : 1;
  }

 private:
  int uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  bool finished(Clock::time_point began) const {
    if (g_interrupted) return true;
    if (o_.seconds > 0 &&
        Clock::now() - began >= std::chrono::seconds(o_.seconds))
      return true;
    return o_.ops > 0 && shared_->calls >= o_.ops;
  }

  dlock::pq::Connection& db() {
    const auto give_up = Clock::now() + kReconnectFor;
    while (!db_ || !db_->ok()) {
      db_.reset();
      try {
        db_.emplace("application_name=soak-harness");
        db_->silence_notices();
      } catch (const dlock::pq::Error& e) {
        if (Clock::now() > give_up) throw;
        std::this_thread::sleep_for(milliseconds(100));
      }
    }
    return *db_;
  }

  // Runs a statement, reconnecting once if the connection had gone.
  dlock::pq::Result exec(const std::string& sql) {
    dlock::pq::Result r = db().try_exec(sql);
    if (!r.ok() && dlock::client::is_connection_failure(r.sqlstate()))
      r = db().try_exec(sql);
    if (!r.ok()) r.raise();
    return r;
  }

  void prepare() {
    exec("SET client_min_messages = warning");
    exec("CREATE EXTENSION IF NOT EXISTS dlock");
    exec("DROP TABLE IF EXISTS soak_rows");
    exec(
        "CREATE TABLE soak_rows (name text PRIMARY KEY, value text NOT NULL,"
        " fence_token bigint NOT NULL DEFAULT 0)");
    exec("SELECT dlock.protect('soak_rows')");
    for (int i = 0; i < o_.names; ++i)
      db().exec("INSERT INTO soak_rows (name, value) VALUES ($1, 'initial')",
                lease_name(i));
    log_.emplace(o_.dir + "/harness.jsonl", "harness");
  }

  void record_rows(Call call) {
    dlock::pq::Result r =
        exec("SELECT name, value, fence_token FROM soak_rows ORDER BY name");
    for (int i = 0; i < r.rows(); ++i) {
      Op op;
      op.call = call;
      op.outcome = Outcome::ok;
      op.name = r.value(i, 0);
      op.value = r.value(i, 1);
      op.token = r.int64(i, 2);
      log_->record(op);
    }
  }

  void start(int index) {
    Slot& s = slots_[index];
    ++s.incarnation;
    shared_->holding[index + 1] = 0;
    const bool async_commit = uniform(0, 2) == 0;
    ++incarnations_;
    if (async_commit) ++async_incarnations_;
    const std::uint64_t seed = rng_();
    s.worker = std::make_unique<forked::Workers>(
        [index](int) { return "soak client " + std::to_string(index + 1); });
    Shared& shared = *shared_;
    const Options& o = o_;
    const int incarnation = s.incarnation;
    s.worker->start(
        1,
        [&o, &shared, index, incarnation, async_commit, seed](int) {
          Client(o, shared, index + 1, incarnation, async_commit, seed).run();
        },
        SIGKILL);
    s.paused = false;
  }

  // False once the client has ended by itself (an error: it never stops
  // before it is asked to).
  bool alive(int index) {
    const forked::Worker& w = (*slots_[index].worker)[0];
    if (!w.running) return false;
    // WNOWAIT leaves it for Workers to reap.
    siginfo_t info{};
    return !(waitid(P_PID, static_cast<id_t>(w.pid), &info,
                    WEXITED | WNOHANG | WNOWAIT) == 0 &&
             info.si_pid == w.pid);
  }

  void restart_failed(int index) {
    Slot& s = slots_[index];
    s.worker->stop_all(milliseconds(1'000));
    const char* why = s.worker->error(0);
    std::cerr << "dlock_soak: client " << index + 1 << "." << s.incarnation
              << " ended: " << (why[0] ? why : "no message") << "\n";
    ++client_errors_;
    start(index);
  }

  void fault() {
    const int r = uniform(0, 99);
    int index = uniform(0, o_.clients - 1);
    if (r < 30) {
      Slot& s = slots_[index];
      s.worker->kill(0);
      ++faults_["SIGKILL client"];
      start(index);
    } else if (r < 60) {
      dlock::pq::Result t = exec(
          "SELECT count(pg_terminate_backend(pid)) FROM"
          " (SELECT pid FROM pg_stat_activity"
          "  WHERE application_name LIKE 'soak-c%' ORDER BY random() LIMIT 1)"
          " p");
      if (t.int64(0, 0) > 0) ++faults_["pg_terminate_backend"];
    } else if (r < 80) {
      // A client holding a grant, if one is.
      for (int k = 0; k < o_.clients && !shared_->holding[index + 1]; ++k)
        index = (index + 1) % o_.clients;
      Slot& s = slots_[index];
      if (s.paused) return;
      if (!s.worker->pause(0)) return;  // it ended: alive() sees it
      s.paused = true;
      s.frozen_until = Clock::now() + kFreezeFor;
      ++faults_["SIGSTOP past the ttl"];
    } else {
      exec("CHECKPOINT");
      ++faults_["CHECKPOINT"];
    }
  }

  std::vector<std::string> pg_ctl(std::vector<std::string> args) {
    std::vector<std::string> cmd;
    if (!o_.server_user.empty()) cmd = {"runuser", "-u", o_.server_user, "--"};
    cmd.push_back(o_.pg_ctl);
    cmd.push_back("-D");
    cmd.push_back(o_.pgdata);
    cmd.insert(cmd.end(), args.begin(), args.end());
    return cmd;
  }

  void restart_server() {
    db_.reset();
    if (run_program(pg_ctl({"-m", "immediate", "-w", "stop"})) != 0)
      throw std::runtime_error("pg_ctl stop -m immediate failed");
    if (run_program(
            pg_ctl({"-l", o_.server_log, "-w", "-t", "120", "start"})) != 0)
      throw std::runtime_error("pg_ctl start failed");
    ++faults_["server crash (immediate stop) and start"];
  }

  void report(double ran) {
    std::vector<std::string> files;
    if (DIR* d = opendir(o_.dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n.size() > 6 && n.compare(n.size() - 6, 6, ".jsonl") == 0)
          files.push_back(o_.dir + "/" + n);
      }
      closedir(d);
    }
    std::sort(files.begin(), files.end());
    const std::vector<Op> ops = dlock::history::read_files(files);
    // Call, then outcome (with the SQLSTATE of refusals and failures).
    std::map<std::string, std::map<std::string, std::int64_t>> by_call;
    std::int64_t calls = 0;
    for (const Op& op : ops) {
      if (op.call == Call::initial_row || op.call == Call::final_row) continue;
      ++calls;
      std::string outcome = dlock::history::to_string(op.outcome);
      if (!op.sqlstate.empty()) outcome += " " + op.sqlstate;
      ++by_call[dlock::history::to_string(op.call)][outcome];
    }
    std::printf(
        "dlock_soak: %lld calls in %.1f s (%.0f/s), %d clients, "
        "%d names, %zu history files, seed %llu\n",
        static_cast<long long>(calls), ran, calls / ran, o_.clients, o_.names,
        files.size(), static_cast<unsigned long long>(o_.seed));
    std::printf("calls by outcome:\n");
    for (const auto& [call, outcomes] : by_call) {
      std::printf("  %-28s", call.c_str());
      for (const auto& [outcome, n] : outcomes)
        std::printf(" %s %lld", outcome.c_str(), static_cast<long long>(n));
      std::printf("\n");
    }
    std::printf(
        "client incarnations: %lld (%lld with synchronous_commit ="
        " off)\n",
        static_cast<long long>(incarnations_),
        static_cast<long long>(async_incarnations_));
    std::printf(
        "not in the history: %lld sweeps (%lld rows deleted), "
        "%lld reconnections\n",
        static_cast<long long>(shared_->sweeps.load()),
        static_cast<long long>(shared_->swept.load()),
        static_cast<long long>(shared_->reconnects.load()));
    std::printf(
        "writes after a pause past every ttl (frozen, or the server "
        "down): %lld refused, %lld accepted\n",
        static_cast<long long>(shared_->late_writes_refused.load()),
        static_cast<long long>(shared_->late_writes_accepted.load()));
    std::printf("faults:\n");
    for (const auto& [kind, n] : faults_)
      std::printf("  %-42s %lld\n", kind.c_str(), static_cast<long long>(n));
    std::fflush(stdout);
  }

  const Options& o_;
  std::mt19937_64 rng_;
  forked::SharedMemory<Shared> shared_;
  std::vector<Slot> slots_;
  std::optional<dlock::pq::Connection> db_;
  std::optional<Log> log_;
  std::map<std::string, std::int64_t> faults_;
  std::int64_t client_errors_ = 0;
  std::int64_t incarnations_ = 0;
  std::int64_t async_incarnations_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.seed == 0) o.seed = std::random_device{}();
  struct sigaction sa = {};
  sa.sa_handler = [](int) { g_interrupted = 1; };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  try {
    return Harness(o).run();
  } catch (const std::exception& e) {
    std::cerr << "dlock_soak: " << e.what() << "\n";
    return 1;
  }
}
