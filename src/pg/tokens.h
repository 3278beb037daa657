// Issuing fencing tokens from dlock.token_seq: the sequence is checked
// before every draw, and on a new history it first moves to a new epoch
// (the rules are in src/core/tokens.h).
#pragma once

#include <optional>

#include "boundary.h"

namespace dlock::pg {

// The next fencing token. Call with the lease's gate held, so that every
// grant of a lease gets a larger token than the one before.
int64 next_token();

// The largest token issued so far, or nothing if none was.
std::optional<int64> last_issued_token();

}  // namespace dlock::pg
