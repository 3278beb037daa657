#include "../core/errors.h"
#include "../core/lease_rules.h"

#include "args.h"

namespace dlock {

void require(FunctionCallInfo fcinfo, int arg, const char* what) {
  if (PG_ARGISNULL(arg)) {
    throw Error(sqlstate::null_value_not_allowed,
                std::string(what) + " must not be NULL");
  }
}

const char* required_text(FunctionCallInfo fcinfo, int arg, const char* what) {
  require(fcinfo, arg, what);
  return text_to_cstring(PG_GETARG_TEXT_PP(arg));
}

IntervalFields interval_fields(const Interval* iv) {
  return IntervalFields{iv->time, iv->day, iv->month};
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

}  // namespace dlock
