// Sleep schedule for dlock.acquire(): capped exponential backoff with equal
// jitter (each sleep uniform in [ceiling/2, ceiling], the ceiling doubling
// from `first` up to `max`; 2 ms and 100 ms by default), never sleeping past
// the holder's expiry or the caller's deadline. Pure C++: the glue sleeps on
// the latch for what next_sleep() returns.
#pragma once
#include "plain_cpp.h"

#include <cstdint>
#include <random>

#include "duration.h"

namespace dlock {

class Backoff {
 public:
  static constexpr Micros kFirst = 2'000;  // 2 ms
  static constexpr Micros kMax = 100'000;  // 100 ms
  static constexpr Micros kMin = 500;      // never spin tighter than 0.5 ms

  Backoff(std::uint64_t seed, Micros first = kFirst, Micros max = kMax);

  // Microseconds to sleep before the next attempt. holder_left: time until
  // the current holder's expiry (<= 0 or absent if unknown); deadline_left:
  // time until the caller's timeout (> 0). The result is in
  // [1, deadline_left] and, when the holder's expiry is known, at most just
  // past it.
  Micros next_sleep(Micros holder_left, Micros deadline_left);

 private:
  Micros ceiling_;
  Micros max_;
  std::mt19937_64 rng_;
};

}  // namespace dlock
