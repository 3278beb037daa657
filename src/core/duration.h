// Durations on the server clock: microseconds, and SQL intervals read as
// exact durations (a day is 24 h, a month 30 days: the linear view
// PostgreSQL itself uses to compare intervals).
#pragma once
#include "plain_cpp.h"

#include <cstdint>
#include <string>

namespace dlock {

using Micros = std::int64_t;

inline constexpr Micros kMicrosPerSecond = 1'000'000;
inline constexpr Micros kMicrosPerDay = 86'400 * kMicrosPerSecond;
inline constexpr int kDaysPerMonth = 30;

// An SQL interval's three fields, as PostgreSQL stores them.
struct IntervalFields {
  Micros time = 0;
  std::int32_t days = 0;
  std::int32_t months = 0;
};

// The interval as an exact duration. Throws 22023, naming `what`, if the
// result does not fit in 64 bits.
Micros duration(const IntervalFields& interval, const char* what);

// The same, clamped to the int64 range instead of throwing, for a function
// that must answer for any interval (dlock.lease_state).
Micros saturated_duration(const IntervalFields& interval);

// a + b, clamped to the int64 range instead of overflowing: times near
// 'infinity' (which SQL may pass) plus a duration stay at the end of time.
inline Micros saturated_sum(Micros a, Micros b) {
  Micros sum;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

// A duration for messages: "1500 ms", or "1500.25 ms" when not whole.
std::string describe_duration(Micros us);

}  // namespace dlock
