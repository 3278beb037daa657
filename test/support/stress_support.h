// Helpers shared by the libpq stress tests and the pooler stress run: a start
// line for client threads, a bounded error log, failure-message lines.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <dlock/pq.h>

namespace stress {

// Waits until every client is connected, so the race starts at once.
class StartLine {
 public:
  explicit StartLine(int parties) : waiting_(parties) {}
  void arrive_and_wait() {
    waiting_.fetch_sub(1);
    while (waiting_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_;
};

// Errors a client met: the count is exact, but only the first few messages
// are kept, enough for the failure message.
struct ErrorLog {
  static constexpr std::size_t kKept = 5;

  std::int64_t count = 0;
  std::vector<std::string> first;

  void add(std::string message) {
    ++count;
    if (first.size() < kKept) first.push_back(std::move(message));
  }
  void add_all(const ErrorLog& other) {
    count += other.count;
    first.insert(first.end(), other.first.begin(), other.first.end());
  }
};

// A client's connection (from the PG* variables) with statement_timeout
// set, so that a stuck server fails the test instead of hanging it; then
// waits at the start line. nullopt, the error logged, if it failed: the
// client still arrives, so the others are not held up.
inline std::optional<dlock::pq::Connection> connect_at_start(
    StartLine& start, const char* statement_timeout, ErrorLog& errors) {
  std::optional<dlock::pq::Connection> conn;
  try {
    conn.emplace();
    conn->exec("SELECT set_config('statement_timeout', $1, false)",
               statement_timeout);
  } catch (const dlock::pq::Error& e) {
    conn.reset();
    errors.add(e.what());
  }
  start.arrive_and_wait();
  return conn;
}

// Lines for a failure message, each on a line of its own, indented.
inline std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "\n  " + l;
  return out;
}

}  // namespace stress
