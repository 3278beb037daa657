#include "duration.h"

#include "errors.h"

namespace dlock {

Micros duration(const IntervalFields& interval, const char* what) {
  Micros days =
      static_cast<Micros>(interval.months) * kDaysPerMonth + interval.days;
  Micros day_part;
  Micros total;
  if (__builtin_mul_overflow(days, kMicrosPerDay, &day_part) ||
      __builtin_add_overflow(day_part, interval.time, &total)) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " is out of range");
  }
  return total;
}

Micros saturated_duration(const IntervalFields& interval) {
  __int128 total = (static_cast<__int128>(interval.months) * kDaysPerMonth +
                    interval.days) *
                       kMicrosPerDay +
                   interval.time;
  if (total > INT64_MAX) return INT64_MAX;
  if (total < INT64_MIN) return INT64_MIN;
  return static_cast<Micros>(total);
}

std::string describe_duration(Micros us) {
  std::string text = std::to_string(us / 1000);
  if (Micros frac = us % 1000; frac != 0) {
    std::string digits = std::to_string(frac < 0 ? -frac : frac);
    digits.insert(0, 3 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    if (us < 0 && us > -1000) text = "-" + text;
    text += "." + digits;
  }
  return text + " ms";
}

}  // namespace dlock
