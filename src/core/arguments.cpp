#include "arguments.h"

#include <string>

#include "errors.h"

namespace dlock {

namespace {

// 22023 unless value is at most `limit` bytes, and not empty unless
// empty_hint is NULL. `subject` starts the DETAIL ("The name has ...").
void check_size(std::string_view value, std::size_t limit, const char* what,
                const char* subject, const char* empty_hint) {
  if (value.empty() && empty_hint != nullptr) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " must not be empty", {}, empty_hint);
  }
  if (value.size() > limit) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " is too long",
                std::string(subject) + " has " + std::to_string(value.size()) +
                    " bytes; the limit is " + std::to_string(limit) + ".");
  }
}

}  // namespace

void check_name(std::string_view name, const char* what) {
  check_size(name, kMaxNameBytes, what, ("The " + std::string(what)).c_str(),
             "");
}

void check_owner(std::string_view owner) {
  check_size(owner, kMaxOwnerBytes, "lease owner", "The owner",
             "Pass NULL to use the session's default owner.");
}

void check_reason(std::string_view reason) {
  check_size(reason, kMaxReasonBytes, "reason", "The reason", nullptr);
}

Micros check_ttl(const IntervalFields& ttl, Micros max_ttl) {
  Micros us = duration(ttl, "ttl");
  if (us <= 0) {
    throw Error(sqlstate::invalid_parameter_value, "ttl must be positive");
  }
  if (us > max_ttl) {
    throw Error(sqlstate::invalid_parameter_value, "ttl exceeds dlock.max_ttl",
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

void check_min_hold(Micros min_hold, Micros max_hold) {
  if (max_hold > 0 && min_hold > max_hold) {
    throw Error(sqlstate::invalid_parameter_value,
                "min_hold must not exceed max_hold",
                "min_hold is " + describe_duration(min_hold) +
                    "; max_hold is " + describe_duration(max_hold) + ".");
  }
}

int check_permits(const std::optional<std::int64_t>& permits, bool shared) {
  if (!permits) return 1;
  if (shared) {
    throw Error(sqlstate::invalid_parameter_value,
                "permits cannot be given with shared => true",
                "A shared lease has any number of holders; a semaphore's "
                "permits are each held by one.");
  }
  if (*permits < 1 || *permits > kMaxPermits) {
    throw Error(sqlstate::invalid_parameter_value,
                "permits must be between 1 and " + std::to_string(kMaxPermits),
                "permits is " + std::to_string(*permits) + ".");
  }
  return static_cast<int>(*permits);
}

}  // namespace dlock
