// Module entry: PG_MODULE_MAGIC, settings, transaction callback.
#include "module.h"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

namespace dlock {

int max_ttl_ms = 24 * 60 * 60 * 1000;

namespace {

// The transaction whose only WAL so far is a release's write, and where
// that WAL ended. Plain data: no C++ globals with constructors.
TransactionId release_only_xid = InvalidTransactionId;
XLogRecPtr release_only_end = InvalidXLogRecPtr;

void on_xact_event(XactEvent event, void*) {
  if (event == XACT_EVENT_PRE_COMMIT &&
      TransactionIdIsValid(release_only_xid) &&
      GetTopTransactionIdIfAny() == release_only_xid &&
      XactLastRecEnd == release_only_end &&
      synchronous_commit > SYNCHRONOUS_COMMIT_OFF) {
    (void)set_config_option("synchronous_commit", "off", PGC_USERSET,
                            PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
    return;
  }
  if (event != XACT_EVENT_PRE_COMMIT &&
      event != XACT_EVENT_PARALLEL_PRE_COMMIT &&
      event != XACT_EVENT_PRE_PREPARE) {
    release_only_xid = InvalidTransactionId;
  }
}

}  // namespace

void note_release_write(bool was_first_write) {
  if (was_first_write) {
    release_only_xid = GetTopTransactionIdIfAny();
    release_only_end = XactLastRecEnd;
  } else {
    release_only_xid = InvalidTransactionId;
  }
}

}  // namespace dlock

void _PG_init(void) {
  DefineCustomIntVariable(
      "dlock.max_ttl",
      "Longest TTL a lease may be granted or renewed for.",
      "Acquisitions and renewals asking for more fail with SQLSTATE 22023.",
      &dlock::max_ttl_ms, 24 * 60 * 60 * 1000, 1, INT_MAX, PGC_SUSET,
      GUC_UNIT_MS, nullptr, nullptr, nullptr);
  MarkGUCPrefixReserved("dlock");
  RegisterXactCallback(dlock::on_xact_event, nullptr);
}
