#include "lease_rules.h"

namespace dlock {

LeaseState lease_state(const LeaseGrant& grant, Micros now) {
  if (grant.released) {
    return free_at(grant) > now ? LeaseState::released_early
                                : LeaseState::released;
  }
  if (grant.expires_at > now) return LeaseState::held;
  if (free_at(grant) > now) return LeaseState::lock_delay;
  return LeaseState::expired;
}

const char* state_name(LeaseState state) {
  switch (state) {
    case LeaseState::held:
      return "held";
    case LeaseState::lock_delay:
      return "lock-delay";
    case LeaseState::expired:
      return "expired";
    case LeaseState::released:
      return "released";
    case LeaseState::released_early:
      return "released-early";
  }
  return "unknown";
}

Grant decide_grant(const std::optional<LeaseGrant>& grant, Micros now) {
  if (!grant) return Grant::create;
  switch (lease_state(*grant, now)) {
    case LeaseState::held:
      return grant->same_owner ? Grant::same_token : Grant::busy;
    case LeaseState::lock_delay:
    case LeaseState::released_early:
      return Grant::busy;
    case LeaseState::expired:
    case LeaseState::released:
      return Grant::new_token;
  }
  return Grant::busy;
}

NotHeld why_not_held(const std::optional<LeaseGrant>& grant, std::int64_t token,
                     Micros now) {
  if (!grant || token <= 0 || token > grant->token)
    return NotHeld::never_granted;
  if (token < grant->token) return NotHeld::newer_token;
  switch (lease_state(*grant, now)) {
    case LeaseState::held:
      return NotHeld::held;
    case LeaseState::released:
    case LeaseState::released_early:
      return NotHeld::released;
    case LeaseState::lock_delay:
    case LeaseState::expired:
      return NotHeld::expired;
  }
  return NotHeld::expired;
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
