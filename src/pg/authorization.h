// Who may act on a lease. A lease belongs to the role that acquired it:
// that role, roles with its privileges (its members) and dlock's
// administrators (members of dlock_admin, and superusers) may renew,
// release or assert it.
#pragma once

#include <optional>

#include "lease_row.h"
#include "boundary.h"

namespace dlock::pg {

// Whether the current role may act for leases acquired by `role_name`
// (NULL: no role recorded, only administrators may).
bool may_act_for(const char* role_name);

// 42501 unless the caller may act on the grant (name, token) names; a
// token that is not the row's current one is left to the caller's own
// checks.
void check_may_act(const char* name, int64 token,
                   const std::optional<LeaseRow>& row);

}  // namespace dlock::pg
