// The nightly report under the lease "nightly-report", with dlock's C++
// client library.
//
// Takes the lease, writes the report under its fencing token while a
// keeper renews the lease, releases it. Connects with libpq's PG*
// variables. Exit status: 0 done, 1 failed (no report row to write: the
// lease was released), 75 busy (another worker holds the lease), 76 lost
// (the lease ended while working: nothing more was written).
#include <dlock/keeper.h>
#include <dlock/lease.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

using namespace dlock::client;

namespace {

constexpr char kLease[] = "nightly-report";
constexpr int kFailed = 1;
constexpr int kBusy = 75;
constexpr int kLost = 76;

// Every write checks in its own transaction that the lease is still ours
// (assert_held), and the row refuses an older token than its own. It answers
// how many rows it updated: 1, the report's, or 0 if that row is missing.
constexpr char kWrite[] = R"(
SELECT dlock.fenced_update('reports', $1,
         jsonb_build_object('status', $2::text, 'total', $3::numeric),
         jsonb_build_object('day', '2026-11-30'))
  FROM dlock.assert_held($4, $1))";

// False if there was no report row to write.
bool write(dlock::pq::Connection& db, const Grant& g, const std::string& status,
           const dlock::pq::Param& total = std::nullopt) {
  if (db.exec(kWrite, g.token, status, total, kLease).int64(0, 0) != 1) {
    return false;
  }
  std::printf("wrote %s with token %lld\n", status.c_str(),
              static_cast<long long>(g.token));
  return true;
}

// No report row to write: gives the lease back and says so.
int failed(Leases& leases, const Grant& g) {
  leases.release(g);
  std::fprintf(stderr, "failed: no report row for 2026-11-30\n");
  return kFailed;
}

int lost(const std::string& why) {
  std::fprintf(stderr, "lost: %s\n", why.c_str());
  return kLost;
}

int job() {
  dlock::pq::Connection db("");  // "": the PG* environment variables
  Leases leases(db);
  Terms terms;
  terms.ttl = std::chrono::seconds(30);
  std::optional<Grant> g = leases.try_acquire(kLease, default_owner(), terms);
  if (!g) {
    dlock::pq::Result held = db.exec(
        "SELECT coalesce(owner, 'nobody now') FROM dlock.get($1)", kLease);
    std::printf("busy: %s is held by %s\n", kLease, held.value(0, 0).c_str());
    return kBusy;
  }
  std::printf("granted token=%lld\n", static_cast<long long>(g->token));

  try {
    if (!write(db, *g, "running")) return failed(leases, *g);
    // Renews every third of the ttl on a connection of its own; returns
    // once it has renewed (or found the lease lost).
    Keeper keeper(*g, KeeperOptions{});
    if (keeper.lost()) return lost(keeper.why());
    std::puts("renewed");
    dlock::pq::Result sales = db.exec(
        "SELECT coalesce(sum(amount), 0) FROM sales WHERE day = '2026-11-30'");
    if (keeper.lost()) return lost(keeper.why());
    bool wrote = write(db, *g, "done", sales.value(0, 0));
    keeper.stop();
    if (!wrote) return failed(leases, keeper.grant());
    std::puts(leases.release(keeper.grant())
                  ? "released"
                  : "not released: the lease had already ended");
    return 0;
  } catch (const dlock::pq::Error& e) {
    // LD001: a newer token wrote; LD002: the lease ended.
    if (e.sqlstate() == "LD001" || e.sqlstate() == "LD002") {
      return lost(std::string(e.what()) + " (" + e.detail() + ")");
    }
    throw;
  }
}

}  // namespace

int main() {
  try {
    return job();
  } catch (const dlock::pq::Error& e) {
    std::fprintf(stderr, "error: %s %s\n", e.sqlstate().c_str(), e.what());
    return 1;
  }
}
