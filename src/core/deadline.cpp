#include "deadline.h"

#include <algorithm>
#include <chrono>

namespace dlock {

Micros monotonic_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Deadline Deadline::after(Micros now, Micros timeout) {
  return Deadline(saturated_sum(now, timeout));
}

int sleep_ms(Micros free_in, Micros deadline_left) {
  Micros sleep = free_in > 0
                     ? std::min({free_in, kWallClockRecheck, deadline_left})
                     : deadline_left;
  sleep = std::clamp<Micros>(sleep, 0, kLongestSleep - 999);
  return static_cast<int>((sleep + 999) / 1000);
}

}  // namespace dlock
