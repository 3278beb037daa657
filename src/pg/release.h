// A release of a lease or of one holder of it (release, release_all):
// compare-and-set on (name, token), written with the lease's gate held.
#pragma once

#include <optional>

#include "lease_row.h"
#include "boundary.h"

namespace dlock::pg {

// Whether `row` is the lease held with `token` at `now`.
bool held_with(const std::optional<LeaseRow>& row, int64 token,
               TimestampTz now);

// Releases (name, token) if held, with the lease's gate held; `row` is the
// grant as read_grant() read it before or after taking the gate. Wakes the head
// of the lease's queue. Returns whether this call released it.
bool release_gated(const char* name, int64 token, std::optional<LeaseRow> row);

}  // namespace dlock::pg
