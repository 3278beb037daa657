#include <csignal>

#include "../core/deadline.h"
#include "../core/duration.h"

#include "lock_wait.h"

namespace dlock::pg {

namespace {

// PostgreSQL's timers (timeout.c) compare against the wall clock, so the
// handler checks the monotonic deadline itself: a timer that fires early
// (the wall clock stepped forward, or the wait outlasts one timer) is set
// again for what is left.
TimeoutId deadline_timer = MAX_TIMEOUTS;
volatile sig_atomic_t waiting = false;
volatile sig_atomic_t deadline_reached = false;
volatile Micros waiting_until = 0;

extern "C" {
static void on_deadline_timer() {
  if (!waiting) return;
  Micros left = waiting_until - dlock::monotonic_now();
  if (left > 0) {
    enable_timeout_after(deadline_timer, dlock::sleep_ms(0, left));
    return;
  }
  // Ends the lock manager's sleep the way statement_timeout does: as a
  // query cancel, which lock_until() recognises and turns into "false".
  deadline_reached = true;
  InterruptPending = true;
  QueryCancelPending = true;
  SetLatch(MyLatch);
}
}  // extern "C"

void stop_timer() {
  waiting = false;
  disable_timeout(deadline_timer, false);
}

}  // namespace

bool lock_until(const LOCKTAG& tag, LOCKMODE mode, Deadline deadline) {
  if (LockAcquire(&tag, mode, false, true) != LOCKACQUIRE_NOT_AVAIL) {
    return true;
  }
  Micros left = deadline.left(dlock::monotonic_now());
  if (left == 0) return false;
  if (deadline_timer == MAX_TIMEOUTS) {
    deadline_timer = RegisterTimeout(USER_TIMEOUT, on_deadline_timer);
  }
  deadline_reached = false;
  waiting_until = deadline.at();
  waiting = true;
  enable_timeout_after(deadline_timer, dlock::sleep_ms(0, left));

  MemoryContext cxt = CurrentMemoryContext;
  volatile bool timed_out = false;
  PG_TRY();
  { (void)LockAcquire(&tag, mode, false, false); }
  PG_CATCH();
  {
    stop_timer();
    // Any other error (a real cancel, statement_timeout, 40P01) goes on.
    if (!deadline_reached) PG_RE_THROW();
    // Our own cancel: the lock manager has already left the wait queue
    // (LockErrorCleanup) before raising it.
    MemoryContextSwitchTo(cxt);
    FlushErrorState();
    timed_out = true;
  }
  PG_END_TRY();
  stop_timer();
  if (deadline_reached && !timed_out) {
    // Granted just as the deadline passed: the cancel meant for the wait
    // must not hit the statement, and the deadline still holds.
    QueryCancelPending = false;
    LockRelease(&tag, mode, false);
    timed_out = true;
  }
  deadline_reached = false;
  return !timed_out;
}

}  // namespace dlock::pg
