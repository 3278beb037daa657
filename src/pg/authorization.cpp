#include <optional>

#include "../core/errors.h"

#include "authorization.h"
#include "boundary.h"

namespace dlock::pg {

namespace {

bool is_dlock_admin() {
  if (superuser()) return true;
  Oid admin = get_role_oid("dlock_admin", true);
  return OidIsValid(admin) && has_privs_of_role(GetUserId(), admin);
}

}  // namespace

bool may_act_for(const char* role_name) {
  if (role_name == nullptr) return is_dlock_admin();
  Oid role = get_role_oid(role_name, true);
  if (OidIsValid(role) && has_privs_of_role(GetUserId(), role)) return true;
  return is_dlock_admin();
}

void check_may_act(const char* name, int64 token,
                   const std::optional<LeaseRow>& row) {
  if (!row || row->token != token || may_act_for(row->acquired_by)) return;
  throw_error(
      sqlstate::insufficient_privilege,
      psprintf("lease \"%s\" belongs to role \"%s\"", name, row->acquired_by),
      nullptr,
      "Only that role, its members and members of dlock_admin may "
      "renew, release or assert it.");
}

}  // namespace dlock::pg
