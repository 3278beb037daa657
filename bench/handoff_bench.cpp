// dlock_handoff_bench: how fast a lock passes to a client that waits for
// it, dlock.acquire() against PostgreSQL's blocking session-level advisory
// locks, on the server in PGHOST/PGPORT (dlock installed). bench/handoff.sh
// builds and runs it; bench/README.md says what each figure means.
//
//   dlock_handoff_bench [--rounds=N] [--handoff-seconds=S]
//                       [--throughput-seconds=S] [--expiries=N]
//
// The report goes to stdout, progress to stderr. Exits non-zero on any
// unexpected error (a failed statement, a release that finds the lock not
// held, a run that measured nothing), never because a figure is bad.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <dlock/pq.h>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr char kAppName[] = "dlock_handoff_bench";
constexpr char kTtl[] = "30 s";
constexpr char kTimeout[] = "10 s";  // acquire's; advisory's lock_timeout
constexpr char kExpiryTtl[] = "200 ms";
constexpr int kWaiterCounts[] = {1, 4, 16};
constexpr int kWaiterConfigs = static_cast<int>(std::size(kWaiterCounts));
constexpr int kThroughputClients = 16;
constexpr double kWarmupSeconds = 0.5;

constexpr char kDlockAcquire[] =
    "SELECT token FROM dlock.acquire($1, $2::interval, $3::interval)";
constexpr char kDlockRelease[] = "SELECT dlock.release($1, $2::bigint)";
constexpr char kAdvisoryLock[] = "SELECT pg_advisory_lock($1::bigint)";
constexpr char kAdvisoryUnlock[] = "SELECT pg_advisory_unlock($1::bigint)";
// Other benchmark sessions inside the given acquire statement: waiting for
// the lock, or about to find it held.
constexpr char kCountWaiters[] =
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE application_name = $1 AND state = 'active' AND query = $2"
    "   AND pid <> pg_backend_pid()";
// statement_timestamp() is when the waiter's call began: a call that began
// after the holder's expiry never waited, so it measures nothing.
constexpr char kExpiryWait[] =
    "SELECT l.token, statement_timestamp() < $4::timestamptz,"
    "       extract(epoch FROM l.acquired_at - $4::timestamptz) * 1000"
    "  FROM dlock.acquire($1, $2::interval, $3::interval) AS l";

enum class Variant { dlock, advisory };
constexpr Variant kVariants[] = {Variant::dlock, Variant::advisory};

const char* variant_name(Variant v) {
  return v == Variant::dlock ? "dlock" : "advisory";
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

dlock::pq::Connection connect(Variant v) {
  dlock::pq::Connection c(std::string("application_name=") + kAppName);
  // A hung statement fails the run instead of stalling it.
  c.exec("SELECT set_config('statement_timeout', '60s', false)");
  // pg_advisory_lock gives up when dlock.acquire would, with the same 55P03.
  if (v == Variant::advisory) {
    c.exec("SELECT set_config('lock_timeout', $1, false)", kTimeout);
  }
  return c;
}

// Which lock a run contends for: every run gets a fresh lease name and
// advisory key, so nothing a run leaves behind can block the next.
struct LockId {
  std::string name;
  std::int64_t key;
};

LockId next_lock_id() {
  static int runs = 0;
  ++runs;
  return {"handoff-" + std::to_string(runs), 7'000'000 + runs};
}

// One client's side of the lock, on a connection of its own.
class Locker {
 public:
  Locker(Variant v, LockId id) : v_(v), id_(std::move(id)), conn_(connect(v)) {}

  // Blocks until granted (true) or the timeout passes (false, 55P03: a
  // client starved under contention is a figure, not an error).
  bool acquire() {
    dlock::pq::Result r =
        v_ == Variant::dlock
            ? conn_.try_exec(kDlockAcquire, id_.name, kTtl, kTimeout)
            : conn_.try_exec(kAdvisoryLock, id_.key);
    if (!r.ok()) {
      if (r.sqlstate() == "55P03") return false;
      r.raise();
    }
    if (v_ == Variant::dlock) {
      if (r.isnull(0, 0))
        throw dlock::pq::Error("", "dlock.acquire returned NULL");
      token_ = r.value(0, 0);
    }
    return true;
  }

  void release() {
    dlock::pq::Result r = v_ == Variant::dlock
                              ? conn_.exec(kDlockRelease, id_.name, token_)
                              : conn_.exec(kAdvisoryUnlock, id_.key);
    if (!r.boolean(0, 0)) {
      throw dlock::pq::Error("", std::string(variant_name(v_)) +
                                     ": release found the lock not held");
    }
  }

  const char* acquire_sql() const {
    return v_ == Variant::dlock ? kDlockAcquire : kAdvisoryLock;
  }
  dlock::pq::Connection& connection() { return conn_; }

 private:
  Variant v_;
  LockId id_;
  dlock::pq::Connection conn_;
  std::string token_;
};

// Starts a run's clients together once all are connected, stops them after
// the run's time, and keeps the first error: any error stops the run.
class RunControl {
 public:
  explicit RunControl(int clients) : clients_(clients) {}

  // Each client, once connected.
  void wait_for_start() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++arrived_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return arrived_ == clients_ || stop_; });
  }

  bool stopped() const { return stop_.load(); }

  void fail(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.empty()) error_ = what;
    stop_ = true;
    changed_.notify_all();
  }

  // The main thread: waits for every client to start, lets them run for
  // `seconds`, stops them; returns the seconds between start and stop.
  double run_for(double seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return arrived_ == clients_ || stop_; });
    Clock::time_point start = Clock::now();
    Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
    changed_.wait_until(lock, end, [&] { return stop_.load(); });
    stop_ = true;
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  const std::string& error() const { return error_; }

 private:
  const int clients_;
  int arrived_ = 0;
  std::atomic<bool> stop_{false};
  std::string error_;
  std::mutex mutex_;
  std::condition_variable changed_;
};

// Runs client(i) on n threads for `seconds`; returns the measured seconds.
// Throws the first client error once every thread has ended.
double run_clients(int n, double seconds, RunControl& ctl,
                   const std::function<void(int)>& client) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        client(i);
      } catch (const std::exception& e) {
        ctl.fail(e.what());
      }
    });
  }
  double elapsed = ctl.run_for(seconds);
  for (std::thread& t : threads) t.join();
  if (!ctl.error().empty()) throw std::runtime_error(ctl.error());
  return elapsed;
}

struct HandoffResult {
  std::vector<double> ms;  // release returned -> next acquire returned
  std::vector<double> ms_from_call;  // release called -> next acquire returned
  int oldest_first = 0;  // hand-offs to the client that waited longest
  int timeouts = 0;      // acquire calls that gave up (55P03)
};

// Grant and release times of one hand-off run, in grant order (one holder
// at a time, so grant k's release hands off to grant k + 1), and since
// when each client has been waiting.
class HandoffLog {
 public:
  explicit HandoffLog(int clients) : waiting_since_(clients) {}

  void waiting(int client, Clock::time_point since) {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_since_[client] = since;
  }

  void timed_out(int client) {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_since_[client].reset();
    ++timeouts_;
  }

  std::size_t granted(int client, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mutex_);
    bool oldest = true;
    for (const std::optional<Clock::time_point>& since : waiting_since_) {
      if (since && *since < *waiting_since_[client]) oldest = false;
    }
    waiting_since_[client].reset();
    grants_.push_back({at, {}, std::nullopt, oldest});
    changed_.notify_all();
    return grants_.size() - 1;
  }

  // Only releases made with every waiter blocked are measured.
  void released(std::size_t grant, Clock::time_point called,
                Clock::time_point returned, bool measured) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!measured) return;
    grants_[grant].release_called_at = called;
    grants_[grant].released_at = returned;
  }

  // Until the grant after `grant` (or the end of the run).
  void wait_for_next_grant(std::size_t grant, const RunControl& ctl) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (grants_.size() <= grant + 1 && !ctl.stopped()) {
      changed_.wait_for(lock, milliseconds(10));
    }
  }

  // After the run. A latency is negative when the waiter's reply came back
  // before the releaser's.
  HandoffResult result() const {
    HandoffResult r;
    for (std::size_t k = 0; k + 1 < grants_.size(); ++k) {
      if (!grants_[k].released_at) continue;
      Clock::time_point next = grants_[k + 1].granted_at;
      r.ms.push_back(ms_between(*grants_[k].released_at, next));
      r.ms_from_call.push_back(ms_between(grants_[k].release_called_at, next));
      r.oldest_first += grants_[k + 1].oldest_first;
    }
    r.timeouts = timeouts_;
    return r;
  }

 private:
  struct Grant {
    Clock::time_point granted_at;
    Clock::time_point release_called_at;
    std::optional<Clock::time_point> released_at;  // set if measured
    bool oldest_first;  // no other client had been waiting longer
  };
  std::vector<Grant> grants_;
  std::vector<std::optional<Clock::time_point>> waiting_since_;
  int timeouts_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
};

// Until `waiters` other clients are in their acquire statement; false if
// the run stopped first.
bool wait_for_waiters(Locker& l, int waiters, const RunControl& ctl) {
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    dlock::pq::Result r =
        l.connection().exec(kCountWaiters, kAppName, l.acquire_sql());
    if (r.int64(0, 0) >= waiters) return true;
    if (ctl.stopped()) return false;
    if (Clock::now() > deadline) {
      throw dlock::pq::Error("",
                             "the waiters were not all blocked within 10 s");
    }
    std::this_thread::sleep_for(microseconds(100));
  }
}

// A run of hand-offs after release: waiters + 1 clients cycle through the
// lock; whoever holds it waits until all the others are blocked in acquire,
// holds 0-1 ms more and releases. A client that released sits out until
// the next grant, so that it never competes for the lock it just released.
HandoffResult handoff_run(Variant v, int waiters, double seconds) {
  LockId id = next_lock_id();
  RunControl ctl(waiters + 1);
  HandoffLog log(waiters + 1);
  run_clients(waiters + 1, seconds, ctl, [&](int i) {
    Locker l(v, id);
    std::mt19937 rng(
        static_cast<unsigned>(i) * 7919u +
        static_cast<unsigned>(Clock::now().time_since_epoch().count()));
    std::uniform_int_distribution<int> hold_us(0, 1000);
    ctl.wait_for_start();
    // Clients that start together have waited alike: which of them the
    // server saw first is unknown, so none counts as the oldest alone.
    bool first = true;
    while (!ctl.stopped()) {
      log.waiting(i, first ? Clock::time_point::min() : Clock::now());
      first = false;
      if (!l.acquire()) {
        log.timed_out(i);
        continue;
      }
      std::size_t grant = log.granted(i, Clock::now());
      bool measured = !ctl.stopped() && wait_for_waiters(l, waiters, ctl);
      if (measured) std::this_thread::sleep_for(microseconds(hold_us(rng)));
      Clock::time_point releasing = Clock::now();
      l.release();
      log.released(grant, releasing, Clock::now(), measured);
      if (ctl.stopped()) break;
      log.wait_for_next_grant(grant, ctl);
    }
  });
  HandoffResult result = log.result();
  if (result.ms.empty()) throw std::runtime_error("no hand-off was measured");
  return result;
}

struct ThroughputResult {
  double seconds = 0;
  std::vector<std::int64_t> grants;  // per client
  std::vector<double> acquire_ms;    // every granted acquire call counted
  std::int64_t timeouts = 0;         // acquire calls that gave up (55P03)

  double rate() const {
    std::int64_t cycles = 0;
    for (std::int64_t g : grants) cycles += g;
    return static_cast<double>(cycles) / seconds;
  }
};

// A run of blocking contended cycles: every client loops acquire, release
// on the one lock. Cycles that end after the stop are not counted.
ThroughputResult throughput_run(Variant v, double seconds) {
  LockId id = next_lock_id();
  RunControl ctl(kThroughputClients);
  std::vector<std::int64_t> grants(kThroughputClients, 0);
  std::vector<std::int64_t> timeouts(kThroughputClients, 0);
  std::vector<std::vector<double>> acquire_ms(kThroughputClients);
  ThroughputResult result;
  result.seconds = run_clients(kThroughputClients, seconds, ctl, [&](int i) {
    Locker l(v, id);
    ctl.wait_for_start();
    while (!ctl.stopped()) {
      Clock::time_point asked = Clock::now();
      if (!l.acquire()) {
        ++timeouts[i];
        continue;
      }
      Clock::time_point got = Clock::now();
      l.release();
      if (ctl.stopped()) break;
      ++grants[i];
      acquire_ms[i].push_back(ms_between(asked, got));
    }
  });
  result.grants = grants;
  for (int i = 0; i < kThroughputClients; ++i) {
    result.acquire_ms.insert(result.acquire_ms.end(), acquire_ms[i].begin(),
                             acquire_ms[i].end());
    result.timeouts += timeouts[i];
  }
  if (result.acquire_ms.empty()) {
    throw std::runtime_error("no contended cycle completed");
  }
  return result;
}

struct ExpiryResult {
  std::vector<double> ms;  // waiter's acquired_at - holder's expires_at
  int late = 0;            // waiter began after the expiry: not measured
};

// Hand-offs at expiry: a holder takes a fresh lease for kExpiryTtl and
// never releases it; a waiter on another session is blocked in acquire.
ExpiryResult expiry_run(int count) {
  dlock::pq::Connection holder = connect(Variant::dlock);
  dlock::pq::Connection waiter = connect(Variant::dlock);
  ExpiryResult result;
  for (int i = 0; i < count; ++i) {
    LockId id = next_lock_id();
    dlock::pq::Result h = holder.exec(
        "SELECT expires_at FROM dlock.try_acquire($1, $2::interval)", id.name,
        kExpiryTtl);
    if (h.isnull(0, 0)) {
      throw dlock::pq::Error("", "a fresh lease was not granted: " + id.name);
    }
    dlock::pq::Result w =
        waiter.exec(kExpiryWait, id.name, kTtl, kTimeout, h.value(0, 0));
    if (w.boolean(0, 1)) {
      result.ms.push_back(std::stod(w.value(0, 2)));
    } else {
      ++result.late;
    }
    if (!waiter.exec(kDlockRelease, id.name, w.value(0, 0)).boolean(0, 0)) {
      throw dlock::pq::Error("", "release found the expiry lease not held");
    }
  }
  if (result.ms.empty()) throw std::runtime_error("no expiry was measured");
  return result;
}

// ---------------------------------------------------------------- figures

// Nearest rank, like bench/run.sh.
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(p * v.size()));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::vector<double> concat(const std::vector<std::vector<double>>& parts) {
  std::vector<double> all;
  for (const std::vector<double>& p : parts) {
    all.insert(all.end(), p.begin(), p.end());
  }
  return all;
}

// dlock / advisory for each round, median over the rounds; rounds whose
// advisory figure is not positive have no ratio (NaN if none has).
double median_ratio(const std::vector<double>& dlock,
                    const std::vector<double>& advisory) {
  std::vector<double> ratios;
  for (std::size_t r = 0; r < dlock.size(); ++r) {
    if (advisory[r] > 0) ratios.push_back(dlock[r] / advisory[r]);
  }
  return ratios.empty() ? NAN : median(ratios);
}

std::string ratio_text(double ratio) {
  if (std::isnan(ratio)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", ratio);
  return buf;
}

struct Options {
  int rounds = 5;
  double handoff_seconds = 2;
  double throughput_seconds = 15;
  int expiries = 50;
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::size_t eq = arg.find('=');
    std::string key = arg.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    char* end = nullptr;
    double number = std::strtod(value.c_str(), &end);
    bool ok = !value.empty() && *end == '\0' && number > 0;
    if (ok && key == "--rounds") {
      o.rounds = static_cast<int>(number);
    } else if (ok && key == "--handoff-seconds") {
      o.handoff_seconds = number;
    } else if (ok && key == "--throughput-seconds") {
      o.throughput_seconds = number;
    } else if (ok && key == "--expiries") {
      o.expiries = static_cast<int>(number);
    } else {
      throw std::runtime_error("bad argument: " + arg);
    }
  }
  if (o.rounds < 1 || o.expiries < o.rounds) {
    throw std::runtime_error("need --rounds >= 1 and --expiries >= --rounds");
  }
  return o;
}

void progress(const std::string& what) { std::cerr << "==> " << what << "\n"; }

// Every run's figures, by round.
struct Results {
  // [index in kWaiterCounts][index in kVariants][round]
  std::vector<HandoffResult> handoff[kWaiterConfigs][2];
  std::vector<ThroughputResult> throughput[2];  // [variant][round]
  std::vector<ExpiryResult> expiry;             // [round]
};

double max_of(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

void print_handoff(const Options& o, const Results& res) {
  std::printf(
      "hand-off after release: waiters + 1 clients share one lock. The\n"
      "holder waits until all the others are blocked in acquire (timeout\n"
      "%s), holds 0-1 ms more and releases. Latency runs from its release\n"
      "call returning (or being made) to the next acquire call returning;\n"
      "client clock, one process, all rounds pooled. x adv: dlock /\n"
      "advisory latency from the call, per round, median of the rounds.\n"
      "oldest: hand-offs to the client that had waited longest. timeouts:\n"
      "acquire calls that gave up. %gs a run.\n\n",
      kTimeout, o.handoff_seconds);
  std::printf("%26s %26s  %s\n", "", "release returned -> grant",
              "release called -> grant");
  std::printf("%-9s %7s %8s %8s %8s %8s %8s %8s %9s %9s %6s %8s\n", "variant",
              "waiters", "samples", "p50 ms", "p99 ms", "max ms", "p50 ms",
              "p99 ms", "x adv p50", "x adv p99", "oldest", "timeouts");
  for (int w = 0; w < kWaiterConfigs; ++w) {
    std::vector<double> p50[2], p99[2];
    for (int v = 0; v < 2; ++v) {
      for (const HandoffResult& run : res.handoff[w][v]) {
        p50[v].push_back(percentile(run.ms_from_call, 0.50));
        p99[v].push_back(percentile(run.ms_from_call, 0.99));
      }
    }
    for (int v = 0; v < 2; ++v) {
      std::vector<std::vector<double>> returned, called;
      int oldest = 0, timeouts = 0;
      for (const HandoffResult& run : res.handoff[w][v]) {
        returned.push_back(run.ms);
        called.push_back(run.ms_from_call);
        oldest += run.oldest_first;
        timeouts += run.timeouts;
      }
      std::vector<double> after = concat(returned), from = concat(called);
      bool dlock = kVariants[v] == Variant::dlock;
      std::printf(
          "%-9s %7d %8zu %8.3f %8.3f %8.3f %8.3f %8.3f %9s %9s %5.0f%% %8d\n",
          variant_name(kVariants[v]), kWaiterCounts[w], after.size(),
          percentile(after, 0.50), percentile(after, 0.99), max_of(after),
          percentile(from, 0.50), percentile(from, 0.99),
          dlock ? ratio_text(median_ratio(p50[0], p50[1])).c_str() : "",
          dlock ? ratio_text(median_ratio(p99[0], p99[1])).c_str() : "",
          100.0 * oldest / after.size(), timeouts);
    }
  }
  std::printf("\n");
}

void print_expiry(const Results& res) {
  std::vector<double> all;
  int late = 0;
  for (const ExpiryResult& r : res.expiry) {
    all.insert(all.end(), r.ms.begin(), r.ms.end());
    late += r.late;
  }
  std::printf(
      "hand-off at expiry (dlock only): a holder takes a lease for %s and\n"
      "never releases it; one waiter is blocked in acquire. Latency: the\n"
      "waiter's acquired_at - the holder's expires_at (server clock), all\n"
      "rounds pooled. late: the waiter's call began after the expiry, not\n"
      "measured.\n\n",
      kExpiryTtl);
  std::printf("%7s %5s %8s %8s %8s %8s\n", "samples", "late", "min ms",
              "p50 ms", "p99 ms", "max ms");
  std::printf("%7zu %5d %8.3f %8.3f %8.3f %8.3f\n\n", all.size(), late,
              *std::min_element(all.begin(), all.end()), percentile(all, 0.50),
              percentile(all, 0.99), max_of(all));
}

void print_throughput(const Options& o, const Results& res) {
  std::printf(
      "blocking contended throughput and fairness: %d clients loop acquire\n"
      "(timeout %s) -> release on one lock, %gs a run. cycles/s: median of\n"
      "the rounds (min..max). x adv: dlock / advisory per round, median.\n"
      "fewest, most: grants of the least and most served client in a\n"
      "round, most/few their ratio, each the median of the rounds.\n"
      "timeouts: acquire calls that gave up. call: how long a granted\n"
      "acquire call took, all rounds pooled.\n\n",
      kThroughputClients, kTimeout, o.throughput_seconds);
  std::printf("%-9s %8s %15s %6s %6s %6s %9s %8s %8s %8s\n", "variant",
              "cycles/s", "(min..max)", "x adv", "fewest", "most", "most/few",
              "timeouts", "call p50", "call p99");
  std::vector<double> rates[2];
  for (int v = 0; v < 2; ++v) {
    for (const ThroughputResult& r : res.throughput[v]) {
      rates[v].push_back(r.rate());
    }
  }
  for (int v = 0; v < 2; ++v) {
    std::vector<double> fewest, most, spread, calls;
    std::int64_t timeouts = 0;
    for (const ThroughputResult& r : res.throughput[v]) {
      auto [lo, hi] = std::minmax_element(r.grants.begin(), r.grants.end());
      fewest.push_back(static_cast<double>(*lo));
      most.push_back(static_cast<double>(*hi));
      spread.push_back(*lo > 0 ? static_cast<double>(*hi) / *lo : INFINITY);
      calls.insert(calls.end(), r.acquire_ms.begin(), r.acquire_ms.end());
      timeouts += r.timeouts;
    }
    char range[40];
    std::snprintf(range, sizeof range, "(%.0f..%.0f)",
                  *std::min_element(rates[v].begin(), rates[v].end()),
                  max_of(rates[v]));
    bool dlock = kVariants[v] == Variant::dlock;
    std::printf(
        "%-9s %8.0f %15s %6s %6.0f %6.0f %9.2f %8lld %8.3f %8.3f\n",
        variant_name(kVariants[v]), median(rates[v]), range,
        dlock ? ratio_text(median_ratio(rates[0], rates[1])).c_str() : "",
        median(fewest), median(most), median(spread),
        static_cast<long long>(timeouts), percentile(calls, 0.50),
        percentile(calls, 0.99));
  }
  std::printf("\n");
}

void print_runs(const Results& res) {
  std::printf("per run: round, variant, figures\n");
  for (std::size_t r = 0; r < res.expiry.size(); ++r) {
    for (int v = 0; v < 2; ++v) {
      const char* name = variant_name(kVariants[v]);
      for (int w = 0; w < kWaiterConfigs; ++w) {
        const HandoffResult& h = res.handoff[w][v][r];
        std::printf(
            "  %zu %-8s hand-off, %2d waiters: %5zu samples, p50 %.3f ms, "
            "p99 %.3f ms\n",
            r + 1, name, kWaiterCounts[w], h.ms.size(), percentile(h.ms, 0.50),
            percentile(h.ms, 0.99));
      }
      const ThroughputResult& t = res.throughput[v][r];
      std::string per_client;
      for (std::int64_t g : t.grants) per_client += " " + std::to_string(g);
      std::printf("  %zu %-8s throughput: %.0f cycles/s; per client%s\n", r + 1,
                  name, t.rate(), per_client.c_str());
    }
    const ExpiryResult& e = res.expiry[r];
    std::printf("  %zu dlock    expiry: %zu samples, %d late, p50 %.3f ms\n",
                r + 1, e.ms.size(), e.late, percentile(e.ms, 0.50));
  }
}

void run(const Options& o) {
  if (dlock::pq::Connection()
          .exec("SELECT 1 FROM pg_extension WHERE extname = 'dlock'")
          .rows() != 1) {
    throw std::runtime_error("dlock is not installed in this database");
  }
  progress("warm-up");
  for (Variant v : kVariants) {
    handoff_run(v, 1, kWarmupSeconds);
    throughput_run(v, kWarmupSeconds);
  }
  expiry_run(2);
  dlock::pq::Connection().exec("CHECKPOINT");

  Results res;
  for (int round = 0; round < o.rounds; ++round) {
    auto label = [&](Variant v, const std::string& what) {
      progress("round " + std::to_string(round + 1) + "/" +
               std::to_string(o.rounds) + ": " + variant_name(v) + " " + what);
    };
    // Alternate which variant runs first, so that neither always does.
    for (int w = 0; w < kWaiterConfigs; ++w) {
      for (int i = 0; i < 2; ++i) {
        int v = (i + round) % 2;
        int n = kWaiterCounts[w];
        label(kVariants[v], "hand-off, " + std::to_string(n) +
                                (n == 1 ? " waiter" : " waiters"));
        res.handoff[w][v].push_back(
            handoff_run(kVariants[v], kWaiterCounts[w], o.handoff_seconds));
      }
    }
    for (int i = 0; i < 2; ++i) {
      int v = (i + round) % 2;
      label(kVariants[v], "contended throughput");
      res.throughput[v].push_back(
          throughput_run(kVariants[v], o.throughput_seconds));
    }
    // The expiries spread over the rounds, the first rounds taking the rest.
    int count = o.expiries / o.rounds + (round < o.expiries % o.rounds);
    label(Variant::dlock, "hand-off at expiry x" + std::to_string(count));
    res.expiry.push_back(expiry_run(count));
  }

  print_handoff(o, res);
  print_expiry(res);
  print_throughput(o, res);
  print_runs(res);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    run(parse_options(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "dlock_handoff_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
