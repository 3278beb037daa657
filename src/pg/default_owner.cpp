#include "../core/arguments.h"

#include "default_owner.h"
#include "boundary.h"

namespace dlock::pg {

const char* default_owner() {
  static char owner[kMaxOwnerBytes + 1];
  if (owner[0] == '\0') {
    const char* app = (application_name && application_name[0])
                          ? application_name
                          : "session";
    long long start_ms =
        (MyStartTimestamp / 1000) +
        (static_cast<long long>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
         SECS_PER_DAY * 1000);
    snprintf(owner, sizeof owner, "%s:%d:%lld", app, MyProcPid, start_ms);
  }
  return owner;
}

DLOCK_FUNCTION(dlock_default_owner) {
  PG_RETURN_TEXT_P(cstring_to_text(default_owner()));
}

}  // namespace dlock::pg
