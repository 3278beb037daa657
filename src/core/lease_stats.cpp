#include "lease_stats.h"

#include <algorithm>

namespace dlock {

namespace {

void add_time(Micros& total, Micros& max, Micros time) {
  time = std::max<Micros>(time, 0);
  total = saturated_sum(total, time);
  max = std::max(max, time);
}

}  // namespace

Counted when_counted(LeaseEvent event) {
  switch (event) {
    case LeaseEvent::grant:
    case LeaseEvent::takeover:
    case LeaseEvent::release:
    case LeaseEvent::force_release:
    case LeaseEvent::lapse:
      return Counted::at_commit;
    case LeaseEvent::busy:
    case LeaseEvent::wait_started:
    case LeaseEvent::wait_granted:
    case LeaseEvent::wait_timed_out:
      return Counted::now;
    case LeaseEvent::renew_failure:
      return Counted::now_if_real;
  }
  return Counted::now_if_real;
}

Micros hold_time(Micros acquired_at, Micros expires_at, Micros ended_at) {
  return std::min(expires_at, ended_at) - acquired_at;
}

void record(LeaseCounters& c, LeaseEvent event, Micros time) {
  c.usage += 1;
  switch (event) {
    case LeaseEvent::grant:
      ++c.grants;
      return;
    case LeaseEvent::takeover:
      ++c.takeovers;
      add_time(c.total_hold, c.max_hold, time);
      return;
    case LeaseEvent::busy:
      ++c.busy;
      return;
    case LeaseEvent::wait_started:
      ++c.waits;
      return;
    case LeaseEvent::wait_granted:
      add_time(c.total_wait, c.max_wait, time);
      return;
    case LeaseEvent::wait_timed_out:
      ++c.wait_timeouts;
      add_time(c.total_wait, c.max_wait, time);
      return;
    case LeaseEvent::release:
      ++c.releases;
      add_time(c.total_hold, c.max_hold, time);
      return;
    case LeaseEvent::force_release:
      ++c.force_releases;
      add_time(c.total_hold, c.max_hold, time);
      return;
    case LeaseEvent::renew_failure:
      ++c.renew_failures;
      return;
    case LeaseEvent::lapse:
      ++c.lapses;
      return;
  }
}

void record_first(LeaseCounters& c, LeaseEvent event, Micros time,
                  double median) {
  record(c, event, time);
  c.usage = median > 0 ? median : 1;
}

double median_usage(double* usages, std::size_t n) {
  if (n == 0) return 0;
  std::nth_element(usages, usages + n / 2, usages + n);
  return usages[n / 2];
}

void merge(LeaseCounters& into, const LeaseCounters& from) {
  into.grants += from.grants;
  into.busy += from.busy;
  into.waits += from.waits;
  into.wait_timeouts += from.wait_timeouts;
  into.total_wait = saturated_sum(into.total_wait, from.total_wait);
  into.max_wait = std::max(into.max_wait, from.max_wait);
  into.takeovers += from.takeovers;
  into.force_releases += from.force_releases;
  into.renew_failures += from.renew_failures;
  into.releases += from.releases;
  into.total_hold = saturated_sum(into.total_hold, from.total_hold);
  into.max_hold = std::max(into.max_hold, from.max_hold);
  into.lapses += from.lapses;
  into.usage += from.usage;
}

std::size_t names_to_evict(std::size_t entries) {
  return std::max<std::size_t>(1, entries / 20);
}

}  // namespace dlock
