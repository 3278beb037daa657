#include "../core/duration.h"

#include "settings.h"

namespace dlock::pg {

namespace {

constexpr int kDefaultMaxTtlMs = 24 * 60 * 60 * 1000;  // one day
int max_ttl_ms = kDefaultMaxTtlMs;

}  // namespace

// A sixty-fourth of the lock table at PostgreSQL's defaults (64 locks per
// transaction times 100 connections), far more than multi-leases need.
constexpr int kDefaultMaxNames = 100;
int max_names = kDefaultMaxNames;
bool log_grants = false;
bool notify_lease_ends = true;
bool track_stats = true;
int stats_max = 5000;

Micros max_ttl() { return static_cast<Micros>(max_ttl_ms) * 1000; }

void define_settings() {
  DefineCustomIntVariable(
      "dlock.max_ttl", "Longest TTL a lease may be granted or renewed for.",
      "Acquisitions and renewals asking for more fail with SQLSTATE 22023.",
      &max_ttl_ms, kDefaultMaxTtlMs, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS,
      nullptr, nullptr, nullptr);
  // SUSET: a cap a caller could raise for itself would protect nothing.
  DefineCustomIntVariable(
      "dlock.max_names",
      "Most lease names one try_acquire_all or acquire_all may take.",
      "Each name takes a lock in the server's shared lock table until the "
      "transaction ends; longer names arrays fail with SQLSTATE 22023.",
      &max_names, kDefaultMaxNames, 1, 100000, PGC_SUSET, 0, nullptr, nullptr,
      nullptr);
  DefineCustomBoolVariable(
      "dlock.log_grants",
      "Logs every grant, takeover after expiry, release, force-release and "
      "failed renewal.",
      "Each line names the lease, owner and token, and for releases how long "
      "the lease was held.",
      &log_grants, false, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable(
      "dlock.notify_lease_ends",
      "Sends NOTIFY dlock_lease_ended when a grant is force-released, taken "
      "over after expiry or released by release_all.",
      "PREPARE TRANSACTION refuses a transaction that has sent a "
      "notification: turn this off (SET LOCAL) in transactions that must be "
      "prepared.",
      &notify_lease_ends, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable(
      "dlock.track_stats", "Counts grants, waits and releases in dlock.stats.",
      "Needs dlock in shared_preload_libraries.", &track_stats, true, PGC_SUSET,
      0, nullptr, nullptr, nullptr);
  // A server-start setting can be defined only while the server starts.
  // Loaded later (not preloaded), dlock counts nothing and the setting is
  // only read, so that a line left in postgresql.conf is not refused.
  DefineCustomIntVariable(
      "dlock.stats_max",
      "Most entries dlock.stats keeps: one per lease name of each database, "
      "and one per database.",
      "When full, the least used names give way; their counts stay in "
      "dlock.stats_totals.",
      &stats_max, 5000, 100, 1000000,
      process_shared_preload_libraries_in_progress ? PGC_POSTMASTER
                                                   : PGC_SIGHUP,
      0, nullptr, nullptr, nullptr);
  MarkGUCPrefixReserved("dlock");
}

}  // namespace dlock::pg
