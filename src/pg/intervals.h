// SQL intervals and dlock's exact durations (src/core/duration.h), both
// ways. Intervals dlock stores or returns carry only microseconds, so they
// mean the same duration in every time zone.
#pragma once

#include "../core/duration.h"

#include "boundary.h"

namespace dlock::pg {

IntervalFields interval_fields(const Interval* iv);

// The duration of an interval Datum; 22023 if it is out of range.
Micros duration_of(Datum interval, const char* what);

// A palloc'd description for messages, as src/core's describe_duration().
const char* duration_text(Micros us);

// A palloc'd interval of exactly `us` microseconds.
Interval* exact_interval(Micros us);

}  // namespace dlock::pg
