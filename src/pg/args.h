// Reading SQL arguments: required ones raise 22004 when NULL.
#pragma once

#include "../core/lease_rules.h"

#include "pg_glue.h"

namespace dlock {

void require(FunctionCallInfo fcinfo, int arg, const char* what);
const char* required_text(FunctionCallInfo fcinfo, int arg, const char* what);
const Interval* required_interval(FunctionCallInfo fcinfo, int arg,
                                  const char* what);
int64 required_token(FunctionCallInfo fcinfo, int arg);
IntervalFields interval_fields(const Interval* iv);

}  // namespace dlock
