#include <dlock/local_deadline.h>

#include <time.h>

#include <algorithm>

namespace dlock::client {

namespace {

constexpr Millis kFirstRetry{100};
constexpr Millis kLongestRetry{2000};

}  // namespace

BootClock::time_point BootClock::now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return time_point(std::chrono::seconds(ts.tv_sec) +
                    std::chrono::nanoseconds(ts.tv_nsec));
}

Millis safety_margin(Millis valid_for, const DeadlinePolicy& policy) {
  auto drift = Millis(static_cast<Millis::rep>(
      static_cast<double>(valid_for.count()) * policy.drift));
  return policy.fixed_margin + drift;
}

LocalDeadline::LocalDeadline(TimePoint sent, Millis valid_for,
                             DeadlinePolicy policy)
    : policy_(policy) {
  deadline_ = sent + valid_for - safety_margin(valid_for, policy_);
  renewed(sent, valid_for);
}

void LocalDeadline::renewed(TimePoint sent, Millis valid_for) {
  TimePoint until = sent + valid_for - safety_margin(valid_for, policy_);
  if (until < deadline_) return;  // a late answer to an older renewal
  deadline_ = until;
  auto interval =
      std::chrono::duration_cast<Millis>(valid_for * policy_.renew_fraction);
  next_renewal_ = std::min(sent + interval, deadline_);
}

TimePoint LocalDeadline::retry_at(TimePoint now, int attempt) const {
  Millis wait = kFirstRetry;
  for (int i = 1; i < attempt && wait < kLongestRetry; ++i) wait *= 2;
  return std::min(now + std::min(wait, kLongestRetry), deadline_);
}

}  // namespace dlock::client
