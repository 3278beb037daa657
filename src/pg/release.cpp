#include <optional>

#include "../core/deadline.h"
#include "../core/lease_rules.h"
#include "../core/lease_stats.h"

#include "release.h"
#include "holder_rows.h"
#include "lease_queue.h"
#include "settings.h"
#include "stats.h"

namespace dlock::pg {

bool held_with(const std::optional<LeaseRow>& row, int64 token,
               TimestampTz now) {
  return row && row->token == token && dlock::is_held(grant_of(*row), now);
}

bool release_gated(const char* name, int64 token, std::optional<LeaseRow> row) {
  TimestampTz now;
  for (;;) {
    now = GetCurrentTimestamp();
    if (!held_with(row, token, now)) return false;
    if (write_release(*row, now) == RowWrite::written) break;
    CHECK_FOR_INTERRUPTS();
    row = read_grant(name, token);
  }
  wake_queue_head(name);
  count_event(name, dlock::LeaseEvent::release,
              dlock::hold_time(row->acquired_at, row->expires_at, now));
  if (log_grants) {
    ereport(LOG, (errmsg_internal(
                     "dlock: lease \"%s\" released with token %lld after "
                     "%lld ms",
                     name, static_cast<long long>(token),
                     static_cast<long long>(
                         (GetCurrentTimestamp() - row->acquired_at) / 1000))));
  }
  return true;
}

}  // namespace dlock::pg
