// dlock's error type and the table of every SQLSTATE a dlock call can end
// with. The table of docs/reference/errors.md is this table, row for row; a
// unit test fails when they differ.
#pragma once
#include "plain_cpp.h"

#include <stdexcept>
#include <string>

namespace dlock {

namespace sqlstate {
inline constexpr char null_value_not_allowed[] = "22004";
inline constexpr char invalid_parameter_value[] = "22023";
inline constexpr char feature_not_supported[] = "0A000";
inline constexpr char undefined_table[] = "42P01";
inline constexpr char undefined_column[] = "42703";
inline constexpr char wrong_object_type[] = "42809";
inline constexpr char datatype_mismatch[] = "42804";
inline constexpr char generated_always[] = "428C9";
inline constexpr char insufficient_privilege[] = "42501";
inline constexpr char duplicate_object[] = "42710";
inline constexpr char object_not_in_prerequisite_state[] = "55000";
inline constexpr char lock_not_available[] = "55P03";
inline constexpr char stale_token[] = "LD001";
inline constexpr char lease_not_held[] = "LD002";
inline constexpr char token_never_issued[] = "LD003";
inline constexpr char lease_mode_conflict[] = "LD004";
inline constexpr char serialization_failure[] = "40001";
inline constexpr char read_only_sql_transaction[] = "25006";
inline constexpr char query_canceled[] = "57014";
inline constexpr char out_of_memory[] = "53200";
inline constexpr char internal_error[] = "XX000";
}  // namespace sqlstate

// One row of the errors table: the code, its name, and what raises it
// (Markdown, as docs/reference/errors.md shows it).
struct ErrorCode {
  const char* sqlstate;
  const char* name;
  const char* raised_by;
};

inline constexpr ErrorCode kErrorCodes[] = {
    {sqlstate::null_value_not_allowed, "null_value_not_allowed",
     "a required argument is NULL, or an element of `names`"},
    {sqlstate::invalid_parameter_value, "invalid_parameter_value",
     "empty or over-long name, owner or resource, or an over-long reason; "
     "ttl ≤ 0 or above "
     "`dlock.max_ttl`; a negative or over-long timeout, lock_delay, "
     "max_hold or min_hold, or a min_hold above max_hold; permits below 1 "
     "or above 1000, or given with `shared`; a permit count other than the "
     "one the lease's holders have (DETAIL names it); an empty names array, "
     "one longer than `dlock.max_names` or a name in it twice; "
     "`changes`/`match` "
     "not a non-empty object; `changes` setting "
     "the fence column; target not a table; a match column without an "
     "equality operator"},
    {sqlstate::feature_not_supported, "feature_not_supported",
     "`acquire` in a REPEATABLE READ or SERIALIZABLE transaction; "
     "`fence_guard` called other than as its trigger"},
    {sqlstate::undefined_table, "undefined_table",
     "`fenced_update`, `protect` or `unprotect` on a relation that does not "
     "exist (OID 0, or dropped)"},
    {sqlstate::undefined_column, "undefined_column",
     "`fenced_update`/`protect` name a column the table lacks"},
    {sqlstate::wrong_object_type, "wrong_object_type",
     "`fenced_update`, `protect` or `unprotect` on an index or a composite "
     "type"},
    {sqlstate::datatype_mismatch, "datatype_mismatch",
     "the fence column is not `bigint`"},
    {sqlstate::generated_always, "generated_always",
     "`fenced_update` changes a generated or system column"},
    {sqlstate::insufficient_privilege, "insufficient_privilege",
     "`renew`/`release`/`assert_held` of a lease another role acquired; "
     "admin functions without `EXECUTE`; `fenced_update` without the table "
     "privilege"},
    {sqlstate::duplicate_object, "duplicate_object",
     "`CREATE EXTENSION`/`ALTER EXTENSION UPDATE` find a role `dlock_admin` "
     "that confers more than dlock grants it"},
    {sqlstate::object_not_in_prerequisite_state,
     "object_not_in_prerequisite_state",
     "`dlock.token_seq` was altered (CYCLE, CACHE other than 1, INCREMENT "
     "below 1, UNLOGGED) or moved back below the lease's last token; dlock's "
     "SQL objects are older than its library"},
    {sqlstate::lock_not_available, "lock_not_available",
     "`acquire` waited its whole timeout"},
    {sqlstate::stale_token, "stale fencing token (dlock)",
     "`fenced_update`, `fence`, the `protect` trigger or `assert_held` met a "
     "newer token; DETAIL names it"},
    {sqlstate::lease_not_held, "lease not held (dlock)",
     "`renew`/`assert_held` of a lease not held with that token; DETAIL says "
     "why"},
    {sqlstate::token_never_issued, "token never issued (dlock)",
     "a token larger than any dlock has issued, or ≤ 0"},
    {sqlstate::lease_mode_conflict, "lease held in another mode (dlock)",
     "`try_acquire`/`acquire` by an owner that holds the lease shared and "
     "asks for it exclusive, or the other way round"},
    {sqlstate::serialization_failure, "serialization_failure",
     "PostgreSQL's own, passed through untouched"},
    {sqlstate::read_only_sql_transaction, "read_only_sql_transaction",
     "a dlock write in a read-only transaction or on a standby"},
    {sqlstate::query_canceled, "query_canceled",
     "cancel or `statement_timeout` while `acquire` waits"},
    {sqlstate::out_of_memory, "out_of_memory",
     "the C++ allocator failed inside dlock"},
    {sqlstate::internal_error, "internal_error",
     "an unexpected C++ exception (a bug: please report it)"},
};

// An error meant for the SQL caller: a five-character SQLSTATE, a primary
// message in PostgreSQL's style (lower case, no trailing period), and
// optional DETAIL and HINT.
class Error : public std::runtime_error {
 public:
  Error(const char* sqlstate, const std::string& message,
        std::string detail = {}, std::string hint = {});

  const char* sqlstate() const noexcept { return sqlstate_; }
  const std::string& detail() const noexcept { return detail_; }
  const std::string& hint() const noexcept { return hint_; }

 private:
  char sqlstate_[6];
  std::string detail_;
  std::string hint_;
};

}  // namespace dlock
