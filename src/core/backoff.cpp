#include "backoff.h"

#include <algorithm>

namespace dlock {

Backoff::Backoff(std::uint64_t seed, Micros first, Micros max)
    : ceiling_(std::max(first, kMin)), max_(std::max(max, kMin)), rng_(seed) {}

Micros Backoff::next_sleep(Micros holder_left, Micros deadline_left) {
  std::uniform_int_distribution<Micros> jitter(ceiling_ / 2, ceiling_);
  Micros sleep = std::max(jitter(rng_), kMin);
  ceiling_ = std::min(ceiling_ * 2, max_);
  // Wake just after the holder's lease runs out: it is free from then on.
  if (holder_left > 0) sleep = std::min(sleep, holder_left + kMin);
  return std::max<Micros>(1, std::min(sleep, deadline_left));
}

}  // namespace dlock
