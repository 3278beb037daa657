// The dlock.lease values lease functions return.
#pragma once

#include "boundary.h"

namespace dlock::pg {

// A dlock.lease; valid_for is measured now, on the server clock.
Datum lease_value(FunctionCallInfo fcinfo, const char* name, const char* owner,
                  int64 token, TimestampTz acquired_at, TimestampTz expires_at);

}  // namespace dlock::pg
