// The keeper's local deadline: until when this process may act as the
// lease's holder, judged on its own clock, never on the server's.
//
// A renewal is answered with valid_for, the validity the server measured
// when it answered. The client cannot know when the server took that
// measure, only that it was after the call was sent and the statement had
// run as long as the server says (acquire's wait: see Grant::valid_from).
// So the grant is surely still valid until
//
//     valid_from + valid_for - safety_margin(valid_for)
//
// where the margin covers a client clock running slower than the server's
// (1% of valid_for) and the time it takes to tell the work to stop (a
// fixed part, 250 ms by default, which the caller may raise, e.g. by the
// grace it gives a child process before killing it).
//
// Pure arithmetic on time points: the keeper feeds it BootClock readings,
// the unit tests feed it made-up ones.
#pragma once

#include <chrono>
#include <optional>

namespace dlock::client {

using Millis = std::chrono::milliseconds;

// CLOCK_BOOTTIME: monotonic, and unlike CLOCK_MONOTONIC it keeps counting
// while the machine is suspended, as the server's clock does.
struct BootClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};
using TimePoint = BootClock::time_point;

struct DeadlinePolicy {
  // Renew once this fraction of the last valid_for has passed.
  double renew_fraction = 1.0 / 3.0;
  // The fixed part of the safety margin.
  Millis fixed_margin{250};
  // The part proportional to valid_for, for clock-rate differences.
  double drift = 0.01;
};

// The margin taken off valid_for.
Millis safety_margin(Millis valid_for, const DeadlinePolicy& policy);

class LocalDeadline {
 public:
  // The grant (or renewal) sent at `sent` answered valid_for.
  LocalDeadline(TimePoint sent, Millis valid_for, DeadlinePolicy policy);

  // A renewal sent at `sent` answered valid_for. A late answer to an
  // earlier renewal never moves the deadline back.
  void renewed(TimePoint sent, Millis valid_for);

  // Until when the lease may be taken as held.
  TimePoint deadline() const { return deadline_; }
  bool passed(TimePoint now) const { return now >= deadline_; }
  // When to send the next renewal: renew_fraction of the last valid_for
  // after the last renewal was sent, and never after the deadline.
  TimePoint next_renewal() const { return next_renewal_; }
  // How long a failed renewal waits before the next try: doubling from
  // 100 ms up to 2 s, never past the deadline. attempt counts from 1.
  TimePoint retry_at(TimePoint now, int attempt) const;

 private:
  DeadlinePolicy policy_;
  TimePoint deadline_;
  TimePoint next_renewal_;
};

}  // namespace dlock::client
