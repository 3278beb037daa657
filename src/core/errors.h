// dlock's error type and the SQLSTATEs it raises.
//
// Pure C++: no PostgreSQL header may be included before or by this file.
//
// | SQLSTATE | condition                 | raised when                                        |
// |----------|---------------------------|----------------------------------------------------|
// | 22004    | null_value_not_allowed    | a required argument (name, ttl, timeout, token) is NULL |
// | 22023    | invalid_parameter_value   | empty or over-long name/owner/resource; ttl <= 0 or above dlock.max_ttl; negative timeout; bad changes/match |
// | 0A000    | feature_not_supported     | acquire() in a REPEATABLE READ or SERIALIZABLE transaction |
// | 42703    | undefined_column          | fenced_update()/protect() name a column the table lacks |
// | 42804    | datatype_mismatch         | the fence column is not bigint                     |
// | 428C9    | generated_always          | fenced_update() changes a generated or system column |
// | 42501    | insufficient_privilege    | renew/release/assert_held of a lease another role acquired |
// | 55000    | object_not_in_prerequisite_state | dlock.token_seq was altered (cycle, cache, unlogged) |
// | 55P03    | lock_not_available        | acquire() waited its whole timeout                 |
// | LD001    | dlock_stale_token         | a newer token exists: fenced write, fence or assert_held refused |
// | LD002    | dlock_lease_not_held      | renew()/assert_held() of a lease not held with that token; DETAIL says why |
// | LD003    | dlock_token_never_issued  | a token larger than any dlock has issued           |
// | 53200    | out_of_memory             | the C++ allocator failed                           |
// | XX000    | internal_error            | any other C++ exception (a bug)                    |
//
// The README's errors table lists the same codes.
#pragma once
#ifdef POSTGRES_H
#error "src/core is plain C++ and must not see PostgreSQL headers"
#endif

#include <stdexcept>
#include <string>

namespace dlock {

namespace sqlstate {
inline constexpr char null_value_not_allowed[] = "22004";
inline constexpr char invalid_parameter_value[] = "22023";
inline constexpr char feature_not_supported[] = "0A000";
inline constexpr char undefined_column[] = "42703";
inline constexpr char datatype_mismatch[] = "42804";
inline constexpr char generated_always[] = "428C9";
inline constexpr char insufficient_privilege[] = "42501";
inline constexpr char object_not_in_prerequisite_state[] = "55000";
inline constexpr char lock_not_available[] = "55P03";
inline constexpr char stale_token[] = "LD001";
inline constexpr char lease_not_held[] = "LD002";
inline constexpr char token_never_issued[] = "LD003";
inline constexpr char out_of_memory[] = "53200";
inline constexpr char internal_error[] = "XX000";
}  // namespace sqlstate

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
