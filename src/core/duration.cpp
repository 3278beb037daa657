#include "duration.h"

#include "errors.h"

namespace dlock {

namespace {

// The interval's exact length: 128 bits hold any three fields.
__int128 exact_length(const IntervalFields& interval) {
  return (static_cast<__int128>(interval.months) * kDaysPerMonth +
          interval.days) *
             kMicrosPerDay +
         interval.time;
}

}  // namespace

Micros duration(const IntervalFields& interval, const char* what) {
  // Summed in 128 bits: a day part past the 64-bit range may be brought
  // back into it by a time part of the other sign.
  __int128 total = exact_length(interval);
  if (total > INT64_MAX || total < INT64_MIN) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " is out of range");
  }
  return static_cast<Micros>(total);
}

Micros saturated_duration(const IntervalFields& interval) {
  __int128 total = exact_length(interval);
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
