// The client library against a live server (PGHOST/PGPORT/PGDATABASE):
// Leases' calls and errors, and a Keeper renewing a lease, and saying it
// is lost when it is force-released (by notification, or by a refused
// renewal behind a pooler) or when a renewal hangs past the local deadline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <dlock/keeper.h>
#include <dlock/lease.h>
#include <dlock/pq.h>

namespace dlock::client {
namespace {

using std::chrono::milliseconds;

// Polls pred every 10 ms until it holds or `limit` passed.
template <typename Pred>
bool eventually(Pred pred, milliseconds limit = milliseconds(10000)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

class KeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_.exec("SET client_min_messages = warning");
    conn_.exec("CREATE EXTENSION IF NOT EXISTS dlock");
  }
  // A lease name of this test run's own, so runs never meet old rows.
  static std::string lease(const std::string& base) {
    return "client-" + base + "-" + std::to_string(getpid());
  }
  // A grant of lease(base) to owner for ttl; the test fails without one.
  Grant take(const std::string& base, const std::string& owner,
             milliseconds ttl) {
    Terms terms;
    terms.ttl = ttl;
    auto g = leases_.try_acquire(lease(base), owner, terms);
    if (!g) ADD_FAILURE() << lease(base) << " was busy";
    return g.value_or(Grant{});
  }

  dlock::pq::Connection conn_;
  Leases leases_{conn_};
};

TEST_F(KeeperTest, LeasesGrantReportBusyRenewAndRelease) {
  Terms terms;
  terms.ttl = milliseconds(60000);
  auto g = leases_.try_acquire(lease("basic"), "worker-a", terms);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name, lease("basic"));
  EXPECT_EQ(g->owner, "worker-a");
  EXPECT_GT(g->token, 0);
  EXPECT_GT(g->valid_for, milliseconds(59000));
  EXPECT_LE(g->valid_for, milliseconds(60000));
  EXPECT_EQ(g->expires_at_us - g->acquired_at_us, 60'000'000);

  EXPECT_FALSE(leases_.try_acquire(lease("basic"), "worker-b", terms));
  EXPECT_FALSE(
      leases_.acquire(lease("basic"), "worker-b", terms, milliseconds(50)));
  EXPECT_EQ(leases_.busy_polls(), 0);
  EXPECT_FALSE(leases_.acquire(lease("basic"), "worker-b", terms,
                               milliseconds(50), WaitMode::poll));
  // Busy, a pause to the end of the 50 ms, busy again: at most one pause.
  const std::int64_t busy_polls = leases_.busy_polls();
  EXPECT_LE(busy_polls, 1);
  auto again = leases_.try_acquire(lease("basic"), "worker-a", terms);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->token, g->token) << "an owner's retry gets its grant";

  Grant renewed = leases_.renew(*g, milliseconds(120000));
  EXPECT_EQ(renewed.token, g->token);
  EXPECT_GT(renewed.valid_for, milliseconds(119000));
  EXPECT_EQ(renewed.acquired_at_us, g->acquired_at_us);
  EXPECT_GT(renewed.expires_at_us, g->expires_at_us);

  EXPECT_TRUE(leases_.release(*g));
  EXPECT_FALSE(leases_.release(*g));
  EXPECT_THROW(leases_.renew(*g), LeaseNotHeld);
  auto next = leases_.acquire(lease("basic"), "worker-b", terms,
                              milliseconds(1000), WaitMode::poll);
  ASSERT_TRUE(next);
  EXPECT_GT(next->token, g->token);
  EXPECT_EQ(leases_.busy_polls(), busy_polls) << "granted at once";
  EXPECT_TRUE(leases_.release(*next));
}

TEST_F(KeeperTest, LeasesMapSqlstatesToTypes) {
  Terms bad;
  bad.ttl = milliseconds(0);
  try {
    leases_.try_acquire(lease("errors"), "w", bad);
    FAIL() << "a zero ttl was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.sqlstate(), "22023");
    EXPECT_STREQ(e.what(), "ttl must be positive");
  }
  Grant forged;
  forged.name = lease("errors");
  forged.owner = "w";
  forged.token = 4'000'000'000'000'000'000;
  try {
    leases_.renew(forged);
    FAIL() << "a forged token was renewed";
  } catch (const TokenNeverIssued& e) {
    EXPECT_EQ(e.sqlstate(), "LD003");
  }
}

TEST_F(KeeperTest, KeeperRenewsUntilStopped) {
  Grant g = take("renew", "keeper-a", milliseconds(1500));
  std::atomic<int> renewals{0};
  KeeperOptions options;
  options.on_renewed = [&](const Grant& r) {
    if (r.token == g.token) ++renewals;
  };
  Keeper keeper(g, options);
  // 1.5 s ttl, renewed every 0.5 s: far more than three renewals before
  // it could expire three times over.
  ASSERT_TRUE(eventually([&] { return renewals.load() >= 6; }));
  EXPECT_FALSE(keeper.lost());
  EXPECT_EQ(keeper.why(), "");
  keeper.stop();
  EXPECT_FALSE(keeper.lost());
  EXPECT_TRUE(leases_.release(keeper.grant()));
}

TEST_F(KeeperTest, KeeperReconnectsWhenItsSessionEnds) {
  Grant g = take("reconnect", "keeper-e", milliseconds(3000));
  std::atomic<int> renewals{0};
  KeeperOptions options;
  options.on_renewed = [&](const Grant&) { ++renewals; };
  Keeper keeper(g, options);
  auto terminated = conn_.exec(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
      " WHERE application_name = 'dlock keeper'");
  EXPECT_EQ(terminated.int64(0, 0), 1);
  int before = renewals.load();
  // Renewals resume on a new session well before the 3 s lease expires.
  ASSERT_TRUE(eventually([&] { return renewals.load() >= before + 3; }));
  EXPECT_FALSE(keeper.lost()) << keeper.why();
  EXPECT_EQ(conn_
                .exec("SELECT count(*) FROM pg_stat_activity"
                      " WHERE application_name = 'dlock keeper'")
                .int64(0, 0),
            1);
  keeper.stop();
  EXPECT_TRUE(leases_.release(keeper.grant()));
}

TEST_F(KeeperTest, MultiHostConninfoFindsTheWritableServer) {
  // The first host is a socket directory with no server: libpq moves on
  // to the next, as it would past a dead or read-only node.
  const char* host = std::getenv("PGHOST");
  ASSERT_NE(host, nullptr) << "PGHOST names the test server";
  std::string conninfo = std::string("host=/nonexistent-dlock-host,") + host +
                         " target_session_attrs=read-write";
  dlock::pq::Connection conn(conninfo);
  Leases leases(conn);
  Terms terms;
  terms.ttl = milliseconds(3000);
  auto g = leases.try_acquire(lease("multihost"), "keeper-f", terms);
  ASSERT_TRUE(g);
  std::atomic<int> renewals{0};
  KeeperOptions options;
  options.conninfo = conninfo;
  options.on_renewed = [&](const Grant&) { ++renewals; };
  Keeper keeper(*g, options);
  ASSERT_TRUE(eventually([&] { return renewals.load() >= 2; }));
  EXPECT_FALSE(keeper.lost()) << keeper.why();
  keeper.stop();
  EXPECT_TRUE(leases.release(keeper.grant()));
}

// Notes when the keeper said its lease was lost, on the keeper's clock.
struct LossRecord {
  std::atomic<bool> told{false};
  TimePoint at;

  KeeperOptions options(bool behind_pooler = false) {
    KeeperOptions o;
    o.behind_pooler = behind_pooler;
    o.on_lost = [this](const std::string&) {
      at = BootClock::now();
      told = true;
    };
    return o;
  }
};

// Force-releases the grant and returns how long the keeper took to say so.
milliseconds force_release_seen_after(dlock::pq::Connection& admin,
                                      Keeper& keeper, const std::string& name,
                                      LossRecord& loss) {
  TimePoint start = BootClock::now();
  admin.exec("SELECT dlock.force_release($1, 'client test')", name);
  EXPECT_TRUE(eventually([&] { return loss.told.load(); }));
  EXPECT_TRUE(keeper.lost());
  return std::chrono::duration_cast<milliseconds>(loss.at - start);
}

TEST_F(KeeperTest, KeeperHearsAForceReleaseAtOnce) {
  // Renewals every 20 s: none in the test.
  Grant g = take("forced", "keeper-b", milliseconds(60000));
  LossRecord loss;
  Keeper keeper(g, loss.options());
  ASSERT_FALSE(keeper.lost());
  milliseconds lag =
      force_release_seen_after(conn_, keeper, lease("forced"), loss);
  std::printf("force-release to lost, by notification: %lld ms\n",
              static_cast<long long>(lag.count()));
  EXPECT_LT(lag, milliseconds(1000));
  EXPECT_EQ(keeper.why(), "force-released by " +
                              conn_.exec("SELECT current_user").value(0, 0) +
                              ": client test");
}

TEST_F(KeeperTest, ANotificationAloneDoesNotEndTheLease) {
  // Any role may NOTIFY any channel: a payload naming the grant makes the
  // keeper renew at once, and the server's answer decides.
  Grant g = take("spoofed", "keeper-g", milliseconds(60000));
  std::atomic<int> renewals{0};
  KeeperOptions options;
  options.on_renewed = [&](const Grant&) { ++renewals; };
  Keeper keeper(g, options);
  int before = renewals.load();
  conn_.exec(
      "SELECT pg_notify('dlock_lease_ended', json_build_object("
      "'name', $1::text, 'token', $2::bigint, 'reason',"
      " 'force-released', 'by', 'ops', 'detail', 'spoofed')::text)",
      lease("spoofed"), g.token);
  ASSERT_TRUE(eventually([&] { return renewals.load() > before; }));
  EXPECT_FALSE(keeper.lost()) << keeper.why();
  keeper.stop();
  EXPECT_TRUE(leases_.release(keeper.grant()));
}

TEST_F(KeeperTest, MaxHoldEndsTheLeaseAndSaysSo) {
  Terms terms;
  terms.ttl = milliseconds(900);
  terms.max_hold = milliseconds(1800);
  auto g = leases_.try_acquire(lease("max-hold"), "keeper-h", terms);
  ASSERT_TRUE(g);
  LossRecord loss;
  Keeper keeper(*g, loss.options());
  ASSERT_TRUE(eventually([&] { return loss.told.load(); }));
  EXPECT_EQ(keeper.why(),
            "max_hold reached: the grant cannot be renewed past it");
  // Renewals moved the expiry up to acquired_at + max_hold, and no further.
  auto row = conn_.exec(
      "SELECT (extract(epoch FROM acquired_at) * 1000000)::bigint"
      "  FROM dlock.leases WHERE name = $1",
      lease("max-hold"));
  EXPECT_EQ(row.int64(0, 0), g->acquired_at_us);
  EXPECT_EQ(keeper.grant().expires_at_us, g->acquired_at_us + 1'800'000);
}

TEST_F(KeeperTest, BehindAPoolerARefusedRenewalSays) {
  Grant g = take("pooled", "keeper-c", milliseconds(1500));
  LossRecord loss;
  Keeper keeper(g, loss.options(true));
  force_release_seen_after(conn_, keeper, lease("pooled"), loss);
  std::string refused = "renewal refused: lease \"" + lease("pooled") +
                        "\" is not held with token " + std::to_string(g.token);
  EXPECT_EQ(keeper.why().rfind(refused, 0), 0u) << keeper.why();
}

TEST_F(KeeperTest, AHangingRenewalLosesTheLeaseAtTheLocalDeadline) {
  Grant g = take("hang", "keeper-d", milliseconds(2000));
  LossRecord loss;
  Keeper keeper(g, loss.options());
  // Another transaction renews the lease and stays open: the keeper's next
  // renewal waits for it in the server, past the local deadline.
  dlock::pq::Connection blocker;
  blocker.exec("BEGIN");
  blocker.exec("SELECT dlock.renew($1, $2::bigint)", lease("hang"), g.token);
  ASSERT_TRUE(eventually([&] { return loss.told.load(); }));
  auto lag =
      std::chrono::duration_cast<milliseconds>(loss.at - keeper.deadline());
  std::printf("local deadline to lost, renewal hanging: %lld ms\n",
              static_cast<long long>(lag.count()));
  EXPECT_GE(lag, milliseconds(0));
  EXPECT_LT(lag, milliseconds(100));
  EXPECT_EQ(keeper.why(),
            "not renewed in time (the last renewal got no answer)");
  blocker.exec("ROLLBACK");
}

}  // namespace
}  // namespace dlock::client
