#include "lease_rules.h"

#include <limits>
#include <string>

#include "errors.h"

namespace dlock {

namespace {

bool add_overflows(Micros a, Micros b, Micros* out) {
  return __builtin_add_overflow(a, b, out);
}

bool mul_overflows(Micros a, Micros b, Micros* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

Micros duration(const IntervalFields& interval, const char* what) {
  Micros days = static_cast<Micros>(interval.months) * kDaysPerMonth +
                interval.days;
  Micros day_part;
  Micros total;
  if (mul_overflows(days, kMicrosPerDay, &day_part) ||
      add_overflows(day_part, interval.time, &total)) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " is out of range");
  }
  return total;
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

void check_name(std::string_view name, const char* what) {
  if (name.empty()) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " must not be empty");
  }
  if (name.size() > kMaxNameBytes) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " is too long",
                "The name has " + std::to_string(name.size()) +
                    " bytes; the limit is " + std::to_string(kMaxNameBytes) +
                    ".");
  }
}

void check_owner(std::string_view owner) {
  if (owner.empty()) {
    throw Error(sqlstate::invalid_parameter_value,
                "lease owner must not be empty",
                {}, "Pass NULL to use the session's default owner.");
  }
  if (owner.size() > kMaxOwnerBytes) {
    throw Error(sqlstate::invalid_parameter_value, "lease owner is too long",
                "The owner has " + std::to_string(owner.size()) +
                    " bytes; the limit is " + std::to_string(kMaxOwnerBytes) +
                    ".");
  }
}

Micros check_ttl(const IntervalFields& ttl, Micros max_ttl) {
  Micros us = duration(ttl, "ttl");
  if (us <= 0) {
    throw Error(sqlstate::invalid_parameter_value, "ttl must be positive");
  }
  if (us > max_ttl) {
    throw Error(sqlstate::invalid_parameter_value,
                "ttl exceeds dlock.max_ttl",
                "The ttl is " + describe_duration(us) + "; dlock.max_ttl is " +
                    describe_duration(max_ttl) + ".",
                "Renew the lease before it expires instead of asking for a "
                "longer ttl.");
  }
  return us;
}

Micros check_timeout(const IntervalFields& timeout) {
  Micros us = duration(timeout, "timeout");
  if (us < 0) {
    throw Error(sqlstate::invalid_parameter_value,
                "timeout must not be negative");
  }
  return us;
}

Grant decide_grant(const std::optional<LeaseRow>& row, Micros now) {
  if (!row) return Grant::create;
  if (is_held(*row, now)) {
    return row->same_owner ? Grant::same_token : Grant::busy;
  }
  return now >= free_at(*row) ? Grant::new_token : Grant::busy;
}

Micros check_optional_duration(const std::optional<IntervalFields>& value,
                               const char* what, Micros max_ttl) {
  if (!value) return 0;
  Micros us = duration(*value, what);
  if (us < 0) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " must not be negative");
  }
  if (us > max_ttl) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " exceeds dlock.max_ttl",
                "It is " + describe_duration(us) + "; dlock.max_ttl is " +
                    describe_duration(max_ttl) + ".");
  }
  return us;
}

NotHeld why_not_held(const std::optional<LeaseRow>& row, std::int64_t token,
                     Micros now) {
  if (!row || token <= 0 || token > row->token) return NotHeld::never_granted;
  if (token < row->token) return NotHeld::newer_token;
  if (row->released) return NotHeld::released;
  if (row->expires_at <= now) return NotHeld::expired;
  return NotHeld::held;
}

const char* describe(NotHeld reason) {
  switch (reason) {
    case NotHeld::held:
      return "The lease is held with this token";
    case NotHeld::never_granted:
      return "The lease was never granted with this token";
    case NotHeld::released:
      return "The lease was released";
    case NotHeld::expired:
      return "The lease expired";
    case NotHeld::newer_token:
      return "The lease was taken by a newer token";
  }
  return "unknown";
}

}  // namespace dlock
