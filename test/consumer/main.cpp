// Takes a lease, keeps it through one renewal, releases it; prints what
// happened. Exits 0 only if every step did what dlock promises.
#include <dlock/keeper.h>
#include <dlock/lease.h>

#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  using namespace dlock::client;
  try {
    dlock::pq::Connection conn("");
    Leases leases(conn);
    Terms terms;
    terms.ttl = std::chrono::milliseconds(1500);
    std::optional<Grant> g =
        leases.try_acquire("consumer-check", default_owner(), terms);
    if (!g) {
      std::puts("busy");
      return 1;
    }
    int renewals = 0;
    KeeperOptions options;
    options.on_renewed = [&](const Grant&) { ++renewals; };
    Keeper keeper(*g, options);
    keeper.stop();
    bool released = leases.release(keeper.grant());
    std::printf("token %lld, renewed %d, released %s, lost %s\n",
                static_cast<long long>(g->token), renewals,
                released ? "yes" : "no", keeper.lost() ? "yes" : "no");
    return released && renewals >= 1 && !keeper.lost() ? 0 : 1;
  } catch (const dlock::pq::Error& e) {
    std::printf("%s: %s\n", e.sqlstate().c_str(), e.what());
    return 1;
  }
}
