#include "../core/deadline.h"

#include "lease_queue.h"
#include "gate.h"
#include "lock_wait.h"

namespace dlock::pg {

namespace {

constexpr uint16 kQueueKeySpace = 4;

// Lease names whose queue head this transaction wakes when it ends (in
// TopTransactionContext).
List* heads_to_wake = NIL;
bool wake_callback_registered = false;

void wake_now(const char* name) {
  LOCKTAG queue = queue_tag(name);
  int holders = 0;
  VirtualTransactionId* vxids =
      GetLockConflicts(&queue, ExclusiveLock, &holders);
  for (int i = 0; i < holders; ++i) {
    // A backend that has moved on gets a spurious wake-up, which costs it
    // one look at its own queue.
    if (PGPROC* proc = compat::vxid_proc(vxids[i])) {
      SetLatch(&proc->procLatch);
    }
  }
  pfree(vxids);
}

// After the top-level transaction has released its locks: its writes are
// visible and the gates it held are open (a prepared transaction keeps
// them, and the woken head waits there).
extern "C" {
static void wake_after_commit(ResourceReleasePhase phase, bool is_commit,
                              bool is_top_level, void*) {
  if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !is_top_level) return;
  List* names = heads_to_wake;
  heads_to_wake = NIL;
  if (!is_commit) return;
  ListCell* cell;
  foreach (cell, names) wake_now(static_cast<const char*>(lfirst(cell)));
}
}  // extern "C"

[[noreturn]] void client_lost() {
  ClientConnectionLost = true;
  InterruptPending = true;
  CHECK_FOR_INTERRUPTS();
  pg_unreachable();
}

}  // namespace

LOCKTAG queue_tag(const char* name) {
  return lease_lock_tag(name, kQueueKeySpace);
}

bool others_queued(const char* name) {
  // The lock manager refuses a lock that a holder or an earlier waiter
  // conflicts with: exactly "someone is queued".
  LOCKTAG queue = queue_tag(name);
  if (LockAcquire(&queue, ExclusiveLock, false, true) ==
      LOCKACQUIRE_NOT_AVAIL) {
    return true;
  }
  LockRelease(&queue, ExclusiveLock, false);
  return false;
}

bool join_queue(const LOCKTAG& queue, Deadline deadline) {
  return lock_until(queue, ExclusiveLock, deadline);
}

void wake_queue_head(const char* name) {
  if (!wake_callback_registered) {
    RegisterResourceReleaseCallback(wake_after_commit, nullptr);
    wake_callback_registered = true;
  }
  MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
  heads_to_wake = lappend(heads_to_wake, pstrdup(name));
  MemoryContextSwitchTo(old);
}

void sleep_as_head(int ms) {
  int events = WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH;
  pgsocket client = PGINVALID_SOCKET;
  if (MyProcPort != nullptr && MyProcPort->sock != PGINVALID_SOCKET) {
    events |= WL_SOCKET_CLOSED;
    client = MyProcPort->sock;
  }
  int rc = WaitLatchOrSocket(MyLatch, events, client, ms, PG_WAIT_EXTENSION);
  if (rc & WL_SOCKET_CLOSED) client_lost();
  CHECK_FOR_INTERRUPTS();
}

void require_client(void) {
  if (MyProcPort != nullptr && !pq_check_connection()) client_lost();
}

}  // namespace dlock::pg
