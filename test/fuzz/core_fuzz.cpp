// libFuzzer target for src/core: the pure rules and text builders, fed
// arbitrary values. Each input's last byte picks a check (FuzzedDataProvider
// reads integers from the end; corpus/ holds one seed per check, named after
// it) and the rest is its data. Every check states an invariant and aborts
// when it does not hold, so a wrong answer is a finding just as a crash or
// an undefined behaviour is (the build adds AddressSanitizer and
// UndefinedBehaviorSanitizer). A dlock::Error escaping a check that does not
// expect one aborts too.
//
// Built and run by test/fuzz/run.sh.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "advisory_key.h"
#include "arguments.h"
#include "deadline.h"
#include "duration.h"
#include "errors.h"
#include "fenced_update_sql.h"
#include "holders.h"
#include "lease_rules.h"
#include "tokens.h"

namespace {

using dlock::Micros;
using Wide = __int128;

constexpr Micros kMax = std::numeric_limits<Micros>::max();
constexpr Micros kMin = std::numeric_limits<Micros>::min();

[[noreturn]] void fail(const char* check, const std::string& what) {
  std::fprintf(stderr, "invariant broken in %s: %s\n", check, what.c_str());
  std::abort();
}

void require(bool ok, const char* check, const std::string& what) {
  if (!ok) fail(check, what);
}

std::string str(Wide v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  std::string digits;
  while (v != 0) {
    int d = static_cast<int>(v % 10);
    digits.insert(digits.begin(), static_cast<char>('0' + (d < 0 ? -d : d)));
    v /= 10;
  }
  return negative ? "-" + digits : digits;
}

Micros clamp(Wide v) {
  return v > kMax ? kMax : v < kMin ? kMin : static_cast<Micros>(v);
}

// An integer, often one at an edge where arithmetic goes wrong.
template <typename T>
T edgy(FuzzedDataProvider& in) {
  constexpr T lo = std::numeric_limits<T>::min();
  constexpr T hi = std::numeric_limits<T>::max();
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: {
      const T edges[] = {0,
                         1,
                         static_cast<T>(-1),
                         lo,
                         hi,
                         static_cast<T>(lo + 1),
                         static_cast<T>(hi - 1)};
      return in.PickValueInArray(edges);
    }
    case 1:
      return static_cast<T>(
          in.ConsumeIntegralInRange<std::int64_t>(-3000, 3000));
    default:
      return in.ConsumeIntegral<T>();
  }
}

Micros micros(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange(0, 4) == 0) {
    const Micros units[] = {1000, dlock::kMicrosPerSecond, dlock::kMicrosPerDay,
                            dlock::kMicrosPerDay * dlock::kDaysPerMonth};
    return static_cast<Micros>(in.ConsumeIntegralInRange(-100000, 100000)) *
           in.PickValueInArray(units);
  }
  return edgy<Micros>(in);
}

dlock::IntervalFields interval(FuzzedDataProvider& in) {
  dlock::IntervalFields f;
  f.time = micros(in);
  f.days = edgy<std::int32_t>(in);
  f.months = edgy<std::int32_t>(in);
  return f;
}

Wide exact(const dlock::IntervalFields& f) {
  return (Wide{f.months} * dlock::kDaysPerMonth + f.days) *
             dlock::kMicrosPerDay +
         f.time;
}

bool in_range(Wide v) { return v >= kMin && v <= kMax; }

void require_error(const dlock::Error& e, const char* sqlstate,
                   const char* check) {
  require(std::strcmp(e.sqlstate(), sqlstate) == 0, check,
          std::string("SQLSTATE ") + e.sqlstate() + ", expected " + sqlstate);
  require(e.what()[0] != '\0', check, "empty message");
}

// ---- durations -------------------------------------------------------

// An interval is its exact length, or 22023 when that does not fit; the
// saturated reading is the same length clamped.
void check_duration(FuzzedDataProvider& in) {
  dlock::IntervalFields f = interval(in);
  Wide want = exact(f);
  try {
    Micros got = dlock::duration(f, "ttl");
    require(in_range(want) && got == want, "duration",
            "got " + str(got) + " for " + str(want));
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::invalid_parameter_value, "duration");
    require(!in_range(want), "duration", "refused " + str(want));
    require(std::string(e.what()) == "ttl is out of range", "duration",
            e.what());
  }
  Micros saturated = dlock::saturated_duration(f);
  require(saturated == clamp(want), "saturated_duration",
          str(saturated) + " for " + str(want));
}

// describe_duration's text reads back as the same number of microseconds:
// "-?D+(.d{1,3})? ms", no trailing zero in the fraction.
void check_describe_duration(FuzzedDataProvider& in) {
  Micros us = micros(in);
  std::string text = dlock::describe_duration(us);
  const char* check = "describe_duration";
  require(text.size() > 3 && text.compare(text.size() - 3, 3, " ms") == 0,
          check, text);
  std::string number = text.substr(0, text.size() - 3);
  std::size_t i = 0;
  bool negative = number[i] == '-';
  if (negative) ++i;
  Wide whole = 0;
  std::size_t start = i;
  while (i < number.size() && number[i] >= '0' && number[i] <= '9') {
    whole = whole * 10 + (number[i++] - '0');
  }
  require(i > start, check, "no integer part: " + text);
  require(number[start] != '0' || i == start + 1, check,
          "leading zero: " + text);
  Wide frac = 0;
  if (i < number.size()) {
    require(number[i] == '.', check, text);
    std::size_t digits = number.size() - i - 1;
    require(digits >= 1 && digits <= 3, check, text);
    require(number.back() != '0', check, "trailing zero: " + text);
    for (std::size_t k = 0; k < 3; ++k) {
      char d = k < digits ? number[i + 1 + k] : '0';
      require(d >= '0' && d <= '9', check, text);
      frac = frac * 10 + (d - '0');
    }
  }
  Wide value = whole * 1000 + frac;
  if (negative) value = -value;
  require(value == us, check, text + " for " + str(us));
  require(!(negative && value == 0), check, "negative zero: " + text);
}

// ---- argument checks -------------------------------------------------

std::string bytes(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:  // around the limits, where off-by-one errors live
      return std::string(
          in.PickValueInArray({0, 1, 254, 255, 256, 499, 500, 501}), 'x');
    default:
      return in.ConsumeRandomLengthString(600);
  }
}

void check_size(FuzzedDataProvider& in) {
  std::string value = bytes(in);
  int which = in.ConsumeIntegralInRange(0, 2);
  std::size_t limit = which == 2   ? dlock::kMaxReasonBytes
                      : which == 1 ? dlock::kMaxOwnerBytes
                                   : dlock::kMaxNameBytes;
  bool empty_ok = which == 2;
  bool ok = (empty_ok || !value.empty()) && value.size() <= limit;
  try {
    if (which == 0) dlock::check_name(value);
    if (which == 1) dlock::check_owner(value);
    if (which == 2) dlock::check_reason(value);
    require(ok, "check_size", "accepted " + str(value.size()) + " bytes");
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::invalid_parameter_value, "check_size");
    require(!ok, "check_size", "refused " + str(value.size()) + " bytes");
    if (!value.empty()) {
      require(e.detail().find(std::to_string(value.size()) + " bytes") !=
                  std::string::npos,
              "check_size", "DETAIL lacks the size: " + e.detail());
    }
  }
}

// A positive max_ttl as dlock.max_ttl gives it (1 ms to INT_MAX ms), or
// any positive value.
Micros max_ttl(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) {
    return Micros{in.ConsumeIntegralInRange<std::int32_t>(1, INT32_MAX)} * 1000;
  }
  return in.ConsumeIntegralInRange<Micros>(1, kMax);
}

void check_durations(FuzzedDataProvider& in) {
  dlock::IntervalFields f = interval(in);
  Micros limit = max_ttl(in);
  Wide want = exact(f);
  const char* check = "duration checks";
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0:
      try {
        Micros got = dlock::check_ttl(f, limit);
        require(got == want && want > 0 && want <= limit, check,
                "ttl " + str(want) + " gave " + str(got));
      } catch (const dlock::Error& e) {
        require_error(e, dlock::sqlstate::invalid_parameter_value, check);
        require(want <= 0 || want > limit, check, "ttl refused " + str(want));
      }
      break;
    case 1:
      try {
        Micros got = dlock::check_timeout(f);
        require(got == want && want >= 0 && in_range(want), check,
                "timeout " + str(want) + " gave " + str(got));
      } catch (const dlock::Error& e) {
        require_error(e, dlock::sqlstate::invalid_parameter_value, check);
        require(want < 0 || !in_range(want), check,
                "timeout refused " + str(want));
      }
      break;
    default: {
      bool absent = in.ConsumeBool();
      std::optional<dlock::IntervalFields> value;
      if (!absent) value = f;
      try {
        Micros got = dlock::check_optional_duration(value, "max_hold", limit);
        require(absent ? got == 0 : got == want && want >= 0 && want <= limit,
                check, "max_hold " + str(want) + " gave " + str(got));
      } catch (const dlock::Error& e) {
        require_error(e, dlock::sqlstate::invalid_parameter_value, check);
        require(!absent && (want < 0 || want > limit), check,
                "max_hold refused " + str(want));
        require(std::string(e.what()).rfind("max_hold", 0) == 0, check,
                std::string("message does not name max_hold: ") + e.what());
      }
    }
  }
}

void check_permits_and_min_hold(FuzzedDataProvider& in) {
  const char* check = "check_permits";
  std::optional<std::int64_t> permits;
  if (in.ConsumeBool()) permits = edgy<std::int64_t>(in);
  bool shared = in.ConsumeBool();
  bool ok =
      !permits || (!shared && *permits >= 1 && *permits <= dlock::kMaxPermits);
  try {
    int got = dlock::check_permits(permits, shared);
    require(ok && got == (permits ? *permits : 1), check, str(got));
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::invalid_parameter_value, check);
    require(!ok, check, "refused " + str(permits.value_or(1)));
  }

  Micros min_hold = in.ConsumeIntegralInRange<Micros>(0, kMax);
  Micros max_hold = in.ConsumeIntegralInRange<Micros>(0, kMax);
  try {
    dlock::check_min_hold(min_hold, max_hold);
    require(max_hold == 0 || min_hold <= max_hold, "check_min_hold",
            "accepted " + str(min_hold) + " above " + str(max_hold));
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::invalid_parameter_value,
                  "check_min_hold");
    require(max_hold > 0 && min_hold > max_hold, "check_min_hold",
            "refused " + str(min_hold) + " under " + str(max_hold));
  }
}

// ---- lease rules -----------------------------------------------------

dlock::LeaseGrant lease_grant(FuzzedDataProvider& in) {
  dlock::LeaseGrant row;
  row.token = edgy<std::int64_t>(in);
  row.expires_at = micros(in);
  row.released = in.ConsumeBool();
  row.same_owner = in.ConsumeBool();
  // Lock-delay and min_hold are never negative (check_optional_duration);
  // min_hold_until is a time, and 'infinity' reaches it from SQL.
  row.lock_delay =
      in.ConsumeBool() ? 0 : in.ConsumeIntegralInRange<Micros>(0, kMax);
  row.min_hold_until = in.ConsumeBool() ? 0 : micros(in);
  return row;
}

std::string describe(const dlock::LeaseGrant& row) {
  return "{token " + str(row.token) + ", expires_at " + str(row.expires_at) +
         (row.released ? ", released" : "") +
         (row.same_owner ? ", same owner" : "") + ", lock_delay " +
         str(row.lock_delay) + ", min_hold_until " + str(row.min_hold_until) +
         "}";
}

Wide exact_free_at(const dlock::LeaseGrant& row) {
  return row.released ? Wide{row.min_hold_until}
                      : Wide{row.expires_at} + row.lock_delay;
}

// free_at() saturates: a lease free past the end of time is free at
// 'infinity' (INT64_MAX), as every other one.
bool occupies_at(const dlock::LeaseGrant& row, Micros now) {
  if (!row.released && row.expires_at > now) return true;
  return clamp(exact_free_at(row)) > now;
}

void check_lease_rules(FuzzedDataProvider& in) {
  const char* check = "lease rules";
  dlock::LeaseGrant row = lease_grant(in);
  Micros now = micros(in);
  require(dlock::free_at(row) == clamp(exact_free_at(row)), "free_at",
          str(dlock::free_at(row)) + " for " + str(exact_free_at(row)));

  dlock::LeaseState state = dlock::lease_state(row, now);
  bool held = !row.released && row.expires_at > now;
  bool free = !occupies_at(row, now);
  using S = dlock::LeaseState;
  S want = row.released ? (free ? S::released : S::released_early)
           : held       ? S::held
           : free       ? S::expired
                        : S::lock_delay;
  require(state == want, check,
          std::string("state ") + dlock::state_name(state) + ", expected " +
              dlock::state_name(want) + " at " + str(now) + " for " +
              describe(row));
  require(dlock::occupies(row, now) == !free, "occupies", str(now));
  std::string name = dlock::state_name(state);
  require(name == "held" || name == "lock-delay" || name == "expired" ||
              name == "released" || name == "released-early",
          check, name);
  // Time only moves a lease towards free: once free, it stays free.
  if (free && now < kMax) {
    require(!dlock::occupies(row, now + 1), check, "occupied again");
  }

  using G = dlock::Grant;
  G grant = dlock::decide_grant(row, now);
  G want_grant = held && row.same_owner ? G::same_token
                 : !free                ? G::busy
                                        : G::new_token;
  require(grant == want_grant, "decide_grant", str(static_cast<int>(grant)));
  require(dlock::decide_grant(std::nullopt, now) == G::create, "decide_grant",
          "no row");

  std::int64_t token = in.ConsumeBool() ? row.token : edgy<std::int64_t>(in);
  dlock::NotHeld why = dlock::why_not_held(row, token, now);
  require((why == dlock::NotHeld::held) ==
              (held && token == row.token && token > 0),
          "why_not_held", str(token));
  require(dlock::describe(why)[0] != '\0', "describe", "empty");

  Micros ttl = in.ConsumeIntegralInRange<Micros>(1, kMax);
  Micros acquired_at = micros(in);
  Micros max_hold = in.ConsumeIntegralInRange<Micros>(0, kMax);
  Wide expiry = Wide{now} + ttl;
  if (max_hold > 0 && expiry > Wide{acquired_at} + max_hold) {
    expiry = Wide{acquired_at} + max_hold;
  }
  Micros got = dlock::capped_expiry(now, ttl, acquired_at, max_hold);
  require(got == clamp(expiry), "capped_expiry",
          str(got) + " for " + str(expiry));
}

// ---- holders of one name ---------------------------------------------

void check_holders(FuzzedDataProvider& in) {
  const char* check = "holders";
  Micros now = micros(in);
  dlock::HolderRequest request;
  request.mode = in.ConsumeBool() ? dlock::HolderMode::shared
                                  : dlock::HolderMode::exclusive;
  request.permits = request.mode == dlock::HolderMode::shared
                        ? 1
                        : in.ConsumeIntegralInRange(1, 4);
  std::vector<dlock::Holder> holders(in.ConsumeIntegralInRange(0, 8));
  for (dlock::Holder& h : holders) {
    h.grant = lease_grant(in);
    h.mode = in.ConsumeBool() ? dlock::HolderMode::shared
                              : dlock::HolderMode::exclusive;
    h.permits =
        in.ConsumeBool() ? request.permits : in.ConsumeIntegralInRange(1, 4);
    if (h.permits > 1) h.mode = dlock::HolderMode::exclusive;
  }
  // Expected answer, counted rather than searched.
  using G = dlock::HolderGrant;
  std::optional<G> want;
  for (const dlock::Holder& h : holders) {
    if (want || !h.grant.same_owner) continue;
    if (h.grant.released || h.grant.expires_at <= now) continue;
    want = h.permits != request.permits ? G::permits_differ
           : h.mode == request.mode     ? G::same_token
                                        : G::other_mode;
  }
  std::set<int> counts;
  std::size_t occupants = 0;
  std::size_t exclusive = 0;
  for (const dlock::Holder& h : holders) {
    if (!occupies_at(h.grant, now)) continue;
    counts.insert(h.permits);
    ++occupants;
    if (h.mode == dlock::HolderMode::exclusive) ++exclusive;
  }
  int in_force = dlock::permits_in_force(holders.data(), holders.size(), now);
  require(occupants == 0 ? in_force == 0 : counts.count(in_force) == 1,
          "permits_in_force", str(in_force));
  if (!want) {
    if (in_force != 0 && in_force != request.permits) {
      want = G::permits_differ;
    } else {
      std::size_t blocking =
          request.mode == dlock::HolderMode::shared ? exclusive : occupants;
      want = blocking <= static_cast<std::size_t>(request.permits - 1)
                 ? G::new_holder
                 : G::busy;
    }
  }
  G got =
      dlock::decide_holder_grant(holders.data(), holders.size(), request, now);
  require(got == *want, check,
          "decision " + str(static_cast<int>(got)) + ", expected " +
              str(static_cast<int>(*want)));

  // A waiter sleeps until holders_free_at: the request fits then, and not
  // a microsecond earlier (when the occupants agree on one permit count).
  Micros at =
      dlock::holders_free_at(holders.data(), holders.size(), request, now);
  if (got == G::new_holder || got == G::same_token) {
    require(at == now, "holders_free_at", str(at));
  } else if (got != G::busy) {
    require(at == kMax, "holders_free_at", str(at));
  } else {
    require(at > now, "holders_free_at", str(at) + " not after " + str(now));
    if (counts.size() == 1) {
      G then = dlock::decide_holder_grant(holders.data(), holders.size(),
                                          request, at);
      require(then == G::new_holder || then == G::same_token, "holders_free_at",
              "still refused at " + str(at));
      if (at - 1 > now) {
        require(dlock::decide_holder_grant(holders.data(), holders.size(),
                                           request, at - 1) == G::busy,
                "holders_free_at", "free before " + str(at));
      }
    }
  }
}

// ---- waiting ---------------------------------------------------------

void check_deadline(FuzzedDataProvider& in) {
  const char* check = "deadline";
  // monotonic_now() counts from boot: never negative.
  Micros now = in.ConsumeIntegralInRange<Micros>(0, kMax);
  Micros timeout = in.ConsumeIntegralInRange<Micros>(0, kMax);
  dlock::Deadline d = dlock::Deadline::after(now, timeout);
  require(d.at() == clamp(Wide{now} + timeout), check, str(d.at()));
  Micros later = in.ConsumeIntegralInRange<Micros>(0, kMax);
  Micros left = d.left(later);
  require(left >= 0 &&
              Wide{left} == (d.at() > later ? Wide{d.at()} - later : Wide{0}),
          check, str(left));
  require(later == kMax || dlock::Deadline::never().left(later) > 0, check,
          "never ended");

  Micros free_in = micros(in);
  Micros deadline_left = in.ConsumeIntegralInRange<Micros>(0, kMax);
  int ms = dlock::sleep_ms(free_in, deadline_left);
  // Toward a grant's end on the wall clock, at most kWallClockRecheck.
  Wide target = deadline_left;
  if (free_in > 0)
    target = std::min<Wide>({free_in, dlock::kWallClockRecheck, deadline_left});
  Wide slept = Wide{ms} * 1000;
  require(ms >= 0, "sleep_ms", str(ms));
  if (target <= dlock::kLongestSleep - 1000) {
    // Never wakes before the moment it waits for, nor a millisecond later.
    require(slept >= target && slept < target + 1000, "sleep_ms",
            str(ms) + " ms for " + str(target) + " us");
  } else {
    require(slept >= dlock::kLongestSleep - 1000, "sleep_ms",
            str(ms) + " ms for " + str(target) + " us");
  }
}

// ---- tokens ----------------------------------------------------------

void check_tokens(FuzzedDataProvider& in) {
  const char* check = "tokens";
  std::int64_t last = edgy<std::int64_t>(in);
  constexpr Wide step = Wide{1} << dlock::kEpochBits;
  try {
    std::int64_t floor = dlock::epoch_floor(last);
    Wide base = last < 0 ? 0 : last;
    require(floor % step == 0, "epoch_floor", str(floor));
    require(floor >= base + step && floor <= base + 2 * step, "epoch_floor",
            str(floor) + " after " + str(last));
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::object_not_in_prerequisite_state,
                  "epoch_floor");
    require(Wide{last} + 2 * step > kMax, "epoch_floor",
            "refused " + str(last));
  }

  std::int64_t next = edgy<std::int64_t>(in);
  try {
    dlock::check_token_grows(next, last);
    require(next > last && next > 0, check, "accepted " + str(next));
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::object_not_in_prerequisite_state, check);
    require(!(next > last && next > 0), check, "refused " + str(next));
  }

  std::optional<std::int64_t> issued;
  if (in.ConsumeBool()) issued = last;
  try {
    dlock::check_token_issued(next, issued);
    require(next > 0 && issued && next <= *issued, check,
            "issued " + str(next));
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::token_never_issued, check);
    require(!(next > 0 && issued && next <= *issued), check,
            "never issued " + str(next));
    require(
        std::string(e.what()).find(std::to_string(next)) != std::string::npos,
        check, e.what());
  }

  bool cycles = in.ConsumeBool();
  std::int64_t cache = edgy<std::int64_t>(in);
  std::int64_t increment = edgy<std::int64_t>(in);
  bool logged = in.ConsumeBool();
  bool safe = !cycles && cache == 1 && increment > 0 && logged;
  try {
    dlock::check_token_sequence(cycles, cache, increment, logged);
    require(safe, "check_token_sequence", "accepted");
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::object_not_in_prerequisite_state,
                  "check_token_sequence");
    require(!safe, "check_token_sequence", "refused");
  }
}

// ---- advisory keys and errors ----------------------------------------

void check_advisory_key(FuzzedDataProvider& in) {
  std::uint8_t digest[32] = {};
  for (std::uint8_t& b : digest) b = in.ConsumeIntegral<std::uint8_t>();
  std::int64_t key = dlock::key_from_sha256(digest);
  std::uint64_t bits = static_cast<std::uint64_t>(key);
  for (int i = 0; i < 8; ++i) {
    require(static_cast<std::uint8_t>(bits >> (56 - 8 * i)) == digest[i],
            "key_from_sha256", "byte " + str(i));
  }
  std::int64_t any = in.ConsumeBool() ? key : edgy<std::int64_t>(in);
  dlock::KeyHalves halves = dlock::split_key(any);
  std::uint64_t joined = (std::uint64_t{halves.high} << 32) | halves.low;
  require(joined == static_cast<std::uint64_t>(any), "split_key", str(any));
}

void check_error(FuzzedDataProvider& in) {
  std::string code = in.ConsumeRandomLengthString(8);
  std::string message = in.ConsumeRandomLengthString(64);
  dlock::Error e(code.c_str(), message, "detail", "hint");
  bool valid = std::strlen(code.c_str()) == 5;
  for (char c : std::string(code.c_str())) {
    valid = valid && ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'));
  }
  require(std::strcmp(e.sqlstate(), valid ? code.c_str() : "XX000") == 0,
          "Error", e.sqlstate());
  require(std::strcmp(message.c_str(), e.what()) == 0, "Error",
          "message changed");
}

// ---- fenced_update's SQL text ----------------------------------------

// An identifier as PostgreSQL's quote_identifier() writes one that needs
// quotes: in double quotes, each double quote doubled.
std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

std::string identifier(FuzzedDataProvider& in) {
  std::string name = in.ConsumeRandomLengthString(70);
  std::string out;
  for (char c : name) {
    if (c != '\0') out += c;  // PostgreSQL's names never hold a NUL
  }
  return out.empty() ? "x" : out;
}

// The SQL text's tokens outside quotes, and the names inside them.
struct Lexed {
  std::map<std::string, int> names;  // quoted identifiers, unquoted
  std::map<std::string, int> words;  // keywords and aliases
  std::map<std::string, int> params;
};

Lexed lex(const std::string& sql) {
  const char* check = "fenced_update lexer";
  Lexed out;
  int depth = 0;
  std::size_t i = 0;
  auto is_word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (c >= '0' && c <= '9');
  };
  while (i < sql.size()) {
    char c = sql[i];
    if (c == ' ') {
      ++i;
    } else if (c == '"') {
      std::string name;
      std::size_t j = i + 1;
      for (;;) {
        require(j < sql.size(), check, "unterminated quote: " + sql);
        if (sql[j] == '"') {
          if (j + 1 < sql.size() && sql[j + 1] == '"') {
            name += '"';
            j += 2;
            continue;
          }
          break;
        }
        name += sql[j++];
      }
      ++out.names[name];
      i = j + 1;
    } else if (c == '$') {
      std::size_t j = i + 1;
      while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
      require(j > i + 1, check, "bare $: " + sql);
      ++out.params[sql.substr(i, j - i)];
      i = j;
    } else if (is_word(c)) {
      std::size_t j = i;
      while (j < sql.size() && is_word(sql[j])) ++j;
      ++out.words[sql.substr(i, j - i)];
      i = j;
    } else if (c == '(' || c == ')') {
      depth += c == '(' ? 1 : -1;
      require(depth >= 0, check, "unbalanced ): " + sql);
      ++i;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      fail(check, "comment outside quotes: " + sql);
    } else if (std::strchr(",.*=<>[]", c) != nullptr) {
      ++i;
    } else {
      fail(check, std::string("stray character '") + c + "': " + sql);
    }
  }
  require(depth == 0, check, "unbalanced (: " + sql);
  return out;
}

// A column type as format_type() gives it: schema-qualified, maybe with a
// typmod and maybe an array.
struct TypeName {
  std::string schema, name, text;
};

TypeName type_name(FuzzedDataProvider& in) {
  TypeName t{identifier(in), identifier(in), ""};
  t.text = quoted(t.schema) + "." + quoted(t.name);
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 1:
      t.text += "(" + str(in.ConsumeIntegralInRange(1, 1000)) + ")";
      break;
    case 2:
      t.text += "(" + str(in.ConsumeIntegralInRange(1, 1000)) + "," +
                str(in.ConsumeIntegralInRange(0, 1000)) + ")";
      break;
  }
  if (in.ConsumeBool()) t.text += "[]";
  return t;
}

void check_fenced_update(FuzzedDataProvider& in) {
  const char* check = "build_fenced_update";
  std::string schema = identifier(in), table = identifier(in);
  std::string fence = identifier(in);
  std::string op_schema = identifier(in);
  std::vector<dlock::FencedColumn> changes, match;
  std::map<std::string, int> update_names, higher_names;
  update_names[schema] += 1;
  update_names[table] += 1;
  update_names[fence] += 3;  // SET, and twice in the fence condition
  higher_names[schema] += 1;
  higher_names[table] += 1;
  higher_names[fence] += 2;  // max(), and the fence condition
  std::size_t n_changes = in.ConsumeIntegralInRange(0, 4);
  std::size_t n_match = in.ConsumeIntegralInRange(0, 4);
  for (std::size_t k = 0; k < n_changes; ++k) {
    std::string name = identifier(in);
    if (name == fence) name += "_";  // the glue refuses changing the fence
    TypeName type = type_name(in);
    changes.push_back(dlock::FencedColumn{quoted(name), type.text, "", false});
    update_names[name] += 3;  // SET a = c.a, and the record's column
    update_names[type.schema] += 1;
    update_names[type.name] += 1;
  }
  for (std::size_t k = 0; k < n_match; ++k) {
    std::string name = identifier(in);
    TypeName type = type_name(in);
    bool is_null = in.ConsumeBool();
    match.push_back(dlock::FencedColumn{quoted(name), type.text,
                                        "OPERATOR(" + quoted(op_schema) + ".=)",
                                        is_null});
    for (auto* names : {&update_names, &higher_names}) {
      (*names)[name] += is_null ? 2 : 3;
      (*names)[type.schema] += 1;
      (*names)[type.name] += 1;
      if (!is_null) (*names)[op_schema] += 1;
    }
  }
  dlock::FencedUpdateSql sql;
  try {
    sql = dlock::build_fenced_update(quoted(schema) + "." + quoted(table),
                                     quoted(fence), changes, match);
  } catch (const dlock::Error& e) {
    require_error(e, dlock::sqlstate::invalid_parameter_value, check);
    require(changes.empty() || match.empty(), check, "refused");
    return;
  }
  require(!changes.empty() && !match.empty(), check, "accepted empty");

  // Every name comes back out of its quotes as often as it was put in,
  // and nothing of a name leaks outside the quotes.
  const std::set<std::string> keywords = {
      "UPDATE", "AS",       "t",      "SET",        "c",
      "FROM",   "WHERE",    "AND",    "IS",         "NULL",
      "OR",     "OPERATOR", "SELECT", "pg_catalog", "jsonb_to_record",
      "m",      "count",    "max"};
  struct Statement {
    const std::string* text;
    const std::map<std::string, int>* names;
    std::map<std::string, int> params;
  };
  const Statement statements[] = {
      {&sql.update, &update_names, {{"$1", 2}, {"$2", 1}, {"$3", 1}}},
      {&sql.higher, &higher_names, {{"$1", 1}, {"$3", 1}}},
  };
  for (const Statement& s : statements) {
    Lexed lexed = lex(*s.text);
    require(lexed.names == *s.names, check, "names differ: " + *s.text);
    require(lexed.params == s.params, check, "parameters differ: " + *s.text);
    for (const auto& [word, count] : lexed.words) {
      bool number = word.find_first_not_of("0123456789") == std::string::npos;
      require(number || keywords.count(word) == 1, check,
              "unexpected word " + word + ": " + *s.text);
    }
  }
  require(sql.update.rfind("UPDATE ", 0) == 0, check, sql.update);
  require(sql.higher.rfind("SELECT ", 0) == 0, check, sql.higher);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  FuzzedDataProvider in(data, size);
  using Check = void (*)(FuzzedDataProvider&);
  static const Check checks[] = {
      check_duration,
      check_describe_duration,
      check_size,
      check_durations,
      check_permits_and_min_hold,
      check_lease_rules,
      check_holders,
      check_deadline,
      check_tokens,
      check_advisory_key,
      check_error,
      check_fenced_update,
  };
  std::size_t pick =
      in.ConsumeIntegral<std::uint8_t>() % (sizeof checks / sizeof checks[0]);
  checks[pick](in);
  return 0;
}
