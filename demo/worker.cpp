// A worker process: it waits for the lease, records the hold, prepares
// the report, writes it through dlock.fenced_update() with its token,
// releases the lease and records how the write and the hold ended.
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "demo.h"
#include "forked_workers.h"
#include <dlock/pq.h>

namespace demo {

namespace {

using std::chrono::milliseconds;

constexpr char kWaitTimeout[] = "1 s";  // how long one acquire() waits

// Writes the report through dlock.fenced_update() with the hold's token and
// records the outcome in the hold's row. The row accepts the write only if
// its fence_token is not above the token (and then sets it to the token);
// otherwise the call fails with LD001 (stale fencing token) and nothing
// changes. An accepted write and its record commit together.
void write_report(dlock::pq::Connection& c, const std::string& owner,
                  const std::string& token) {
  c.exec("BEGIN");
  dlock::pq::Result w = c.try_exec(
      "SELECT dlock.fenced_update('dlock_demo.report', $1::bigint,"
      "         jsonb_build_object('written_by', $2::text,"
      "                            'written_at', clock_timestamp()),"
      "         jsonb_build_object('name', $3::text))",
      token, owner, kLease);
  if (w.ok()) {
    c.exec(
        "UPDATE dlock_demo.holds"
        "   SET wrote = CASE WHEN $2::bigint = 1 THEN 'accepted'"
        "                    ELSE 'no row' END,"
        "       wrote_at = clock_timestamp()"
        " WHERE token = $1::bigint",
        token, w.value(0, 0));
    c.exec("COMMIT");
    return;
  }
  c.exec("ROLLBACK");
  if (w.sqlstate() != "LD001") w.raise();
  // Rejected: a newer holder has written the row. Keep the server's words.
  const std::string detail = w.detail();
  c.exec(
      "UPDATE dlock_demo.holds"
      "   SET wrote = 'rejected', wrote_at = clock_timestamp(),"
      "       write_error = $2"
      " WHERE token = $1::bigint",
      token, w.message() + (detail.empty() ? "" : "\n" + detail));
}

}  // namespace

std::string worker_name(int id) { return "worker-" + std::to_string(id); }

std::string app_name(int id) { return "dlock-demo " + worker_name(id); }

void run_worker(int id, Slot& slot) {
  // Opened after the fork: a libpq connection must never be shared
  // between processes.
  dlock::pq::Connection c("application_name='" + app_name(id) + "'");
  c.exec("SET client_min_messages = warning");
  const std::string owner = worker_name(id);
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> work_ms(kWorkMinMs, kWorkMaxMs);
  std::uniform_int_distribution<int> rest_ms(50, 150);

  while (!forked::stop_requested()) {
    // Grant and record in one transaction: if this process dies before
    // COMMIT, neither the lease nor the record exists.
    c.exec("BEGIN");
    dlock::pq::Result lease = c.try_exec(
        "SELECT l.token, l.acquired_at, l.expires_at"
        "  FROM dlock.acquire($1, $2::interval, $3::interval, $4) AS l",
        kLease, kTtl, kWaitTimeout, owner);
    if (!lease.ok()) {
      c.exec("ROLLBACK");
      if (lease.sqlstate() == "55P03") continue;  // still busy: ask again
      lease.raise();
    }
    const std::string token = lease.value(0, 0);
    c.exec(
        "INSERT INTO dlock_demo.holds (worker, token, acquired_at, expires_at)"
        " VALUES ($1, $2::bigint, $3::timestamptz, $4::timestamptz)",
        id, token, lease.value(0, 1), lease.value(0, 2));
    c.exec("COMMIT");

    // Prepare the report. A holder paused here (SIGSTOP) wakes up believing
    // it still holds the lease and goes on to write.
    slot.token = std::stoll(token);
    slot.work_began_ns = forked::now_ns();
    std::this_thread::sleep_for(milliseconds(work_ms(rng)));
    slot.token = 0;

    write_report(c, owner, token);

    c.exec("BEGIN");
    bool released =
        c.exec("SELECT dlock.release($1, $2::bigint)", kLease, token)
            .boolean(0, 0);
    // A false release means the lease was lost while working (it expired
    // and may have been taken over): the hold ended at its expiry.
    c.exec(
        "UPDATE dlock_demo.holds"
        "   SET ended = CASE WHEN $2::boolean THEN 'released' ELSE 'lost' END,"
        "       released_at = (SELECT l.released_at FROM dlock.leases AS l"
        "                       WHERE l.name = $3 AND l.token = $1::bigint"
        "                         AND $2::boolean)"
        " WHERE token = $1::bigint",
        token, released, kLease);
    c.exec("COMMIT");
    std::this_thread::sleep_for(milliseconds(rest_ms(rng)));
  }
}

}  // namespace demo
