// Checks of SQL arguments, as pure functions: names, owners, reasons, and
// durations with their limits. Each throws dlock::Error with 22023, naming
// the argument, and changes nothing.
#pragma once
#include "plain_cpp.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "duration.h"

namespace dlock {

// Longest lease name (also resource and advisory name), owner and
// force-release reason, in bytes of the database encoding.
inline constexpr std::size_t kMaxNameBytes = 255;
inline constexpr std::size_t kMaxOwnerBytes = 255;
inline constexpr std::size_t kMaxReasonBytes = 500;

// A name: non-empty, at most kMaxNameBytes; `what` names it in messages.
void check_name(std::string_view name, const char* what = "lease name");

// An explicit owner: non-empty, at most kMaxOwnerBytes.
void check_owner(std::string_view owner);

// A force-release reason: at most kMaxReasonBytes (empty is allowed).
void check_reason(std::string_view reason);

// TTL as an exact duration; must be > 0 and <= max_ttl.
Micros check_ttl(const IntervalFields& ttl, Micros max_ttl);

// A timeout (acquire's, advisory_lock's) as an exact duration; >= 0.
Micros check_timeout(const IntervalFields& timeout);

// Lock-delay or max_hold: absent means none (0); must be >= 0 (0 is none)
// and at most max_ttl.
Micros check_optional_duration(const std::optional<IntervalFields>& value,
                               const char* what, Micros max_ttl);

// The most permits a semaphore may have: each grant decision reads every
// holder of the name.
inline constexpr int kMaxPermits = 1000;

// try_acquire's and acquire's permits (absent: an ordinary lease, 1):
// between 1 and kMaxPermits, and never with shared.
int check_permits(const std::optional<std::int64_t>& permits, bool shared);

// A min_hold longer than the grant's max_hold could never be honoured
// (22023). Both in microseconds, 0 for none.
void check_min_hold(Micros min_hold, Micros max_hold);

}  // namespace dlock
