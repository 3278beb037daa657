// The session's default owner, used when a lease call passes owner NULL:
// "<application_name>:<backend pid>:<backend start, Unix ms>".
#pragma once

#include "boundary.h"

namespace dlock::pg {

// Fixed at the session's first use, so that renaming the application later
// does not change who holds the session's leases.
const char* default_owner();

}  // namespace dlock::pg
