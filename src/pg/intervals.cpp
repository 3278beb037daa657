// C++ headers before PostgreSQL's (see pg_headers.h).
#include <string>

#include "../core/duration.h"

#include "intervals.h"
#include "boundary.h"

namespace dlock::pg {

IntervalFields interval_fields(const Interval* iv) {
  return IntervalFields{iv->time, iv->day, iv->month};
}

Micros duration_of(Datum interval, const char* what) {
  return dlock::duration(interval_fields(DatumGetIntervalP(interval)), what);
}

const char* duration_text(Micros us) {
  std::string text = dlock::describe_duration(us);
  return pg_guard([&]() { return pstrdup(text.c_str()); });
}

Interval* exact_interval(Micros us) {
  Interval* iv = static_cast<Interval*>(palloc0(sizeof(Interval)));
  iv->time = us;
  return iv;
}

}  // namespace dlock::pg
