#include "durability.h"

namespace dlock::pg {

namespace {

// The transaction whose only WAL so far is a release's write, and where
// that WAL ended. Plain data: no C++ globals with constructors.
TransactionId release_only_xid = InvalidTransactionId;
XLogRecPtr release_only_end = InvalidXLogRecPtr;

extern "C" {
static void on_xact_event(XactEvent event, void*) {
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
}  // extern "C"

// synchronous_commit's level for one of its setting strings.
int sync_commit_level(const char* setting) {
  if (pg_strcasecmp(setting, "remote_apply") == 0) {
    return SYNCHRONOUS_COMMIT_REMOTE_APPLY;
  }
  if (pg_strcasecmp(setting, "remote_write") == 0) {
    return SYNCHRONOUS_COMMIT_REMOTE_WRITE;
  }
  if (pg_strcasecmp(setting, "local") == 0) {
    return SYNCHRONOUS_COMMIT_LOCAL_FLUSH;
  }
  bool on;
  if (parse_bool(setting, &on)) {
    return on ? SYNCHRONOUS_COMMIT_ON : SYNCHRONOUS_COMMIT_OFF;
  }
  return SYNCHRONOUS_COMMIT_ON;
}

}  // namespace

void register_durability_callback() {
  RegisterXactCallback(on_xact_event, nullptr);
}

void commit_durably() {
  ForceSyncCommit();
  // The reset value may come from the database, the role or the connection
  // as well as postgresql.conf, so it is a floor only where it is higher
  // than on (remote_apply).
  const char* reset = GetConfigOptionResetString("synchronous_commit");
  const char* wanted =
      sync_commit_level(reset) > SYNCHRONOUS_COMMIT_ON ? reset : "on";
  if (synchronous_commit < sync_commit_level(wanted)) {
    (void)set_config_option("synchronous_commit", wanted, PGC_USERSET,
                            PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
  }
}

void note_release_write(bool was_first_write) {
  if (was_first_write) {
    release_only_xid = GetTopTransactionIdIfAny();
    release_only_end = XactLastRecEnd;
  } else {
    release_only_xid = InvalidTransactionId;
  }
}

}  // namespace dlock::pg
