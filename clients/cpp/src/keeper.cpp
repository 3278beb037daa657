#include <dlock/keeper.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include <dlock/lease_ended.h>

namespace dlock::client {

namespace {

// The longest the keeper's thread sleeps before it looks at the deadline
// again (and the most a loss is signalled late).
constexpr Millis kLookAgain{50};

// Why a renewal did not count, before the server's message and ")".
constexpr char kNotConfirmed[] =
    "the last renewal was not confirmed by the synchronous standbys (";

// A reason on one line: libpq's messages may run over several (a failed
// connection adds "\n\tIs the server running ...?").
std::string one_line(const std::string& text) {
  std::string line;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      line += text[i];
      continue;
    }
    while (i + 1 < text.size() &&
           std::isspace(static_cast<unsigned char>(text[i + 1]))) {
      ++i;
    }
    if (i + 1 < text.size()) line += ' ';
  }
  return line;
}

}  // namespace

Keeper::Keeper(Grant grant, KeeperOptions options)
    : options_(std::move(options)),
      grant_(std::move(grant)),
      deadline_(grant_.valid_from, grant_.valid_for, options_.policy) {
  thread_ = std::thread([this] { run(); });
  std::unique_lock<std::mutex> lock(mutex_);
  ready_changed_.wait(lock, [this] { return ready_; });
}

Keeper::~Keeper() { stop(); }

void Keeper::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string Keeper::why() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return why_;
}

Grant Keeper::grant() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return grant_;
}

TimePoint Keeper::deadline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return deadline_.deadline();
}

void Keeper::renewed(const Grant& grant) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deadline_.renewed(grant.valid_from, grant.valid_for);
    grant_ = grant;
    ready_ = true;
  }
  ready_changed_.notify_all();
  if (options_.on_renewed) options_.on_renewed(grant);
}

void Keeper::lose(const std::string& reason) {
  std::string why = one_line(reason);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    why_ = why;
    ready_ = true;
  }
  lost_ = true;
  ready_changed_.notify_all();
  if (options_.on_lost) options_.on_lost(why);
}

void Keeper::run() {
  std::optional<pq::Connection> conn;
  bool renew_now = true;  // on every new connection: renew at once
  int failures = 0;
  TimePoint retry_at{};
  // What went wrong since the last successful renewal, for the reason
  // given when the deadline passes.
  std::string last_error;
  // A notification said the grant ended; the next renewal confirms it
  // (anyone may NOTIFY any channel, so the server's answer decides).
  std::optional<std::string> ended_by;
  // The last renewal did not move the expiry: max_hold caps it.
  bool at_max_hold = false;
  const pq::KeepWaiting keep_waiting = [this] {
    return !stopping_ && !(BootClock::now() >= deadline());
  };
  auto failed = [&](std::string error, bool drop_connection) {
    last_error = std::move(error);
    if (drop_connection) conn.reset();
    std::lock_guard<std::mutex> lock(mutex_);
    retry_at = deadline_.retry_at(BootClock::now(), ++failures);
  };

  while (!stopping_) {
    TimePoint now = BootClock::now();
    if (now >= deadline()) {
      if (last_error.empty() && at_max_hold) {
        lose("max_hold reached: the grant cannot be renewed past it");
      } else {
        lose("not renewed in time (" +
             (last_error.empty()
                  ? "no renewal failed: this process was paused or starved"
                  : last_error) +
             ")");
      }
      return;
    }
    if (now < retry_at) {
      std::this_thread::sleep_for(
          std::min<BootClock::duration>(kLookAgain, retry_at - now));
      continue;
    }
    try {
      if (!conn) {
        conn = pq::Connection::open_interruptible(
            options_.conninfo, options_.application_name, keep_waiting);
        if (!conn) {  // stopping, or the deadline: see above
          last_error = "could not connect in time";
          continue;
        }
        conn->silence_notices();  // the caller's stderr is not the keeper's
        renew_now = true;
        if (!options_.behind_pooler) {
          auto r = conn->run_interruptible(
              std::string("LISTEN ") + kLeaseEndedChannel, {}, keep_waiting);
          if (!r || !r->ok()) {
            failed(r ? r->message() : "LISTEN was not answered", true);
            continue;
          }
        }
      }
      if (!renew_now) {
        TimePoint next = [this] {
          std::lock_guard<std::mutex> lock(mutex_);
          return deadline_.next_renewal();
        }();
        auto wait = std::chrono::duration_cast<Millis>(
            std::clamp<BootClock::duration>(next - now, Millis(0), kLookAgain));
        Grant held = grant();
        for (const pq::Notification& n : conn->notifications(wait)) {
          if (n.channel != kLeaseEndedChannel) continue;
          auto ended = parse_lease_ended(n.payload);
          if (ended && ended->name == held.name && ended->token == held.token) {
            ended_by = ended->describe();
          }
        }
        renew_now = ended_by || BootClock::now() >= next;
        continue;
      }
      TimePoint sent = BootClock::now();
      Statement s = renew_statement(grant(), std::nullopt);
      auto r = conn->run_interruptible(s.sql, s.params, keep_waiting);
      if (!r) {
        last_error = "the last renewal got no answer";
        conn.reset();  // the loop's checks decide
        continue;
      }
      if (r->ok()) {
        if (auto warning = conn->commit_not_replicated()) {
          // Committed here but maybe not on the standbys: a failover could
          // bring back the expiry before it, so the deadline stays.
          failed(std::string(kNotConfirmed) + warning->message + ")", false);
          continue;
        }
        if (auto g = read_grant(*r, sent)) {
          failures = 0;
          last_error.clear();
          ended_by.reset();  // still held: the notification was not true
          at_max_hold = g->expires_at_us == grant().expires_at_us;
          renew_now = false;
          renewed(*g);
          continue;
        }
        failed("dlock.renew returned no lease", false);
        continue;
      }
      if (ends_grant(r->sqlstate())) {
        std::string detail = r->detail();
        lose(ended_by ? *ended_by
                      : "renewal refused: " + r->message() +
                            (detail.empty() ? "" : " (" + detail + ")"));
        return;
      }
      failed(r->sqlstate() + " " + r->message(),
             is_connection_failure(r->sqlstate()));
    } catch (const pq::Error& e) {
      failed(e.what(), true);
    }
  }
}

}  // namespace dlock::client
