// When a wait in dlock.acquire() ends, on the monotonic clock: a step of
// the wall clock (NTP, an operator's date) neither stretches nor cuts a
// timeout. Pure C++: the glue reads monotonic_now() and sleeps for what
// sleep_ms() returns.
#pragma once
#include "plain_cpp.h"

#include <cstdint>

#include "duration.h"

namespace dlock {

// Microseconds on a clock that never steps (std::chrono::steady_clock).
Micros monotonic_now();

class Deadline {
 public:
  // `timeout` from `now`; a sum past the clock's range saturates, which is
  // later than any server will run (a timeout never turns into "at once").
  static Deadline after(Micros now, Micros timeout);
  static Deadline never() { return Deadline(INT64_MAX); }

  Micros at() const { return at_; }
  // Time left at `now`, 0 once passed.
  Micros left(Micros now) const { return at_ > now ? at_ - now : 0; }

 private:
  explicit Deadline(Micros at) : at_(at) {}
  Micros at_;
};

// The longest single sleep or timer the glue asks for: what a C int of
// milliseconds holds (a longer wait sleeps again).
constexpr Micros kLongestSleep = INT32_MAX * Micros{1000};

// How long the head of a queue sleeps at most while it waits for the
// holder's grant to free the lease. That moment is on the server's wall
// clock, which may step: a step forward expires the grant at once, and the
// head must notice it then, not when its sleep on the monotonic clock
// ends.
constexpr Micros kWallClockRecheck = 1'000'000;

// How long the head of a lease's queue sleeps, or a wait's timer runs:
// until the holder's grant frees the lease (free_in > 0, and then at most
// kWallClockRecheck) or the deadline, whichever comes first, and at most
// kLongestSleep; a release wakes the head earlier. Rounded up to whole
// milliseconds so that it never wakes just before the moment it waits for.
int sleep_ms(Micros free_in, Micros deadline_left);

}  // namespace dlock
