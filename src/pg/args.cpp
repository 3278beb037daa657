#include <optional>

#include "../core/arguments.h"
#include "../core/duration.h"
#include "../core/errors.h"

#include "args.h"
#include "boundary.h"
#include "default_owner.h"
#include "intervals.h"

namespace dlock::pg {

void require(FunctionCallInfo fcinfo, int arg, const char* what) {
  if (PG_ARGISNULL(arg)) {
    throw_error(sqlstate::null_value_not_allowed,
                psprintf("%s must not be NULL", what));
  }
}

const char* required_text(FunctionCallInfo fcinfo, int arg, const char* what) {
  require(fcinfo, arg, what);
  return text_to_cstring(PG_GETARG_TEXT_PP(arg));
}

const char* required_name(FunctionCallInfo fcinfo, int arg, const char* what) {
  const char* name = required_text(fcinfo, arg, what);
  dlock::check_name(name, what);
  return name;
}

const Interval* required_interval(FunctionCallInfo fcinfo, int arg,
                                  const char* what) {
  require(fcinfo, arg, what);
  return PG_GETARG_INTERVAL_P(arg);
}

int64 required_token(FunctionCallInfo fcinfo, int arg) {
  require(fcinfo, arg, "token");
  return PG_GETARG_INT64(arg);
}

std::optional<IntervalFields> optional_interval(FunctionCallInfo fcinfo,
                                                int arg) {
  if (PG_NARGS() <= arg || PG_ARGISNULL(arg)) return std::nullopt;
  return interval_fields(PG_GETARG_INTERVAL_P(arg));
}

const char* owner_arg(FunctionCallInfo fcinfo, int arg) {
  const char* owner = optional_owner(fcinfo, arg);
  return owner != nullptr ? owner : default_owner();
}

const char* optional_owner(FunctionCallInfo fcinfo, int arg) {
  if (PG_NARGS() <= arg || PG_ARGISNULL(arg)) return nullptr;
  const char* owner = text_to_cstring(PG_GETARG_TEXT_PP(arg));
  dlock::check_owner(owner);
  return owner;
}

}  // namespace dlock::pg
