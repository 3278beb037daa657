// Reading SQL arguments. Required ones raise 22004 when NULL; `what` names
// the argument in the message. Optional ones may also be absent, for the
// shorter overloads of a function.
#pragma once

#include <optional>

#include "../core/duration.h"

#include "boundary.h"

namespace dlock::pg {

void require(FunctionCallInfo fcinfo, int arg, const char* what);
const char* required_text(FunctionCallInfo fcinfo, int arg, const char* what);
const Interval* required_interval(FunctionCallInfo fcinfo, int arg,
                                  const char* what);
int64 required_token(FunctionCallInfo fcinfo, int arg);

// A required name, checked like a lease name (22023).
const char* required_name(FunctionCallInfo fcinfo, int arg, const char* what);

// An interval argument that may be NULL or absent.
std::optional<IntervalFields> optional_interval(FunctionCallInfo fcinfo,
                                                int arg);

// An owner argument: checked (22023), or the session's default owner when
// NULL.
const char* owner_arg(FunctionCallInfo fcinfo, int arg);

// An owner a call must match: checked (22023), or NULL when NULL or absent.
const char* optional_owner(FunctionCallInfo fcinfo, int arg);

}  // namespace dlock::pg
