// Unit tests of src/core/lease_rules: interval arithmetic, argument checks,
// the grant decision and why a token no longer holds its lease.
#include "lease_rules.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "errors.h"

namespace dlock {
namespace {

constexpr Micros kHour = 3600 * kMicrosPerSecond;
constexpr Micros kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr Micros kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();

IntervalFields iv(Micros time, std::int32_t days = 0, std::int32_t months = 0) {
  IntervalFields f;
  f.time = time;
  f.days = days;
  f.months = months;
  return f;
}

// Runs f, which must throw dlock::Error, and returns the SQLSTATE it carried.
template <typename F>
std::string sqlstate_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.sqlstate();
  }
  return "no error";
}

#define EXPECT_SQLSTATE(expr, code) \
  EXPECT_EQ(sqlstate_of([&] { (void)(expr); }), std::string(code))

// A string of `n` copies of `unit`.
std::string repeat(const std::string& unit, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += unit;
  return s;
}

// ------------------------------------------------------------------ duration

TEST(Duration, ZeroIsZero) { EXPECT_EQ(duration(iv(0), "ttl"), 0); }

TEST(Duration, TimePartIsMicroseconds) {
  EXPECT_EQ(duration(iv(1), "ttl"), 1);
  EXPECT_EQ(duration(iv(1'500'000), "ttl"), 1'500'000);
}

TEST(Duration, DayIs24Hours) {
  EXPECT_EQ(duration(iv(0, 1), "ttl"), 86'400'000'000);
  EXPECT_EQ(duration(iv(0, 1), "ttl"), 24 * kHour);
  EXPECT_EQ(duration(iv(0, 7), "ttl"), 7 * 86'400'000'000);
}

TEST(Duration, MonthIs30Days) {
  EXPECT_EQ(duration(iv(0, 0, 1), "ttl"), 2'592'000'000'000);
  EXPECT_EQ(duration(iv(0, 0, 1), "ttl"), duration(iv(0, 30), "ttl"));
  EXPECT_EQ(duration(iv(0, 0, 12), "ttl"), 360 * kMicrosPerDay);
}

TEST(Duration, FieldsAdd) {
  // 1 mon 2 days 03:00:00.000004
  EXPECT_EQ(duration(iv(3 * kHour + 4, 2, 1), "ttl"),
            32 * kMicrosPerDay + 3 * kHour + 4);
}

TEST(Duration, NegativeParts) {
  EXPECT_EQ(duration(iv(-1), "ttl"), -1);
  EXPECT_EQ(duration(iv(0, -1), "ttl"), -kMicrosPerDay);
  EXPECT_EQ(duration(iv(0, 0, -1), "ttl"), -30 * kMicrosPerDay);
  // '1 day -1 hour' is 23 hours; '1 mon -30 days' is nothing.
  EXPECT_EQ(duration(iv(-kHour, 1), "ttl"), 23 * kHour);
  EXPECT_EQ(duration(iv(0, -30, 1), "ttl"), 0);
  // '-1 day +25:00:00' is one hour.
  EXPECT_EQ(duration(iv(25 * kHour, -1), "ttl"), kHour);
}

TEST(Duration, LargestFieldsThatFit) {
  // 106751991 days is the most whole days that fit in int64 microseconds.
  const Micros day_part = 106'751'991 * kMicrosPerDay;
  EXPECT_EQ(duration(iv(0, 106'751'991), "ttl"), day_part);
  EXPECT_EQ(duration(iv(kInt64Max - day_part, 106'751'991), "ttl"),
            kInt64Max);
  EXPECT_EQ(duration(iv(kInt64Max), "ttl"), kInt64Max);
  EXPECT_EQ(duration(iv(kInt64Min), "ttl"), kInt64Min);
}

TEST(Duration, OverflowIs22023) {
  const Micros day_part = 106'751'991 * kMicrosPerDay;
  // The sum of the parts overflows.
  EXPECT_SQLSTATE(duration(iv(kInt64Max - day_part + 1, 106'751'991), "ttl"),
                  "22023");
  EXPECT_SQLSTATE(duration(iv(kInt64Max, 1), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(kInt64Min, -1), "ttl"), "22023");
  // The day part alone overflows.
  EXPECT_SQLSTATE(duration(iv(0, 106'751'992), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, kInt32Max), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, kInt32Min), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, 0, kInt32Max), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(0, 0, kInt32Min), "ttl"), "22023");
  EXPECT_SQLSTATE(duration(iv(kInt64Max, kInt32Max, kInt32Max), "timeout"),
                  "22023");
}

TEST(Duration, OverflowMessageNamesTheArgument) {
  try {
    duration(iv(0, 0, kInt32Max), "timeout");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.sqlstate()), "22023");
    EXPECT_NE(std::string(e.what()).find("timeout"), std::string::npos);
  }
}

// ------------------------------------------------------------ name and owner

TEST(CheckName, EmptyIsRejected) {
  EXPECT_SQLSTATE(check_name(""), "22023");
}

TEST(CheckName, OneByteIsAccepted) { EXPECT_NO_THROW(check_name("a")); }

TEST(CheckName, Exactly255BytesIsAccepted) {
  EXPECT_NO_THROW(check_name(std::string(255, 'n')));
}

TEST(CheckName, 256BytesIsRejected) {
  EXPECT_SQLSTATE(check_name(std::string(256, 'n')), "22023");
  EXPECT_SQLSTATE(check_name(std::string(10'000, 'n')), "22023");
}

TEST(CheckName, LimitCountsBytesNotCharacters) {
  const std::string euro = "\xE2\x82\xAC";  // U+20AC, 3 bytes in UTF-8
  const std::string e_acute = "\xC3\xA9";   // U+00E9, 2 bytes in UTF-8
  ASSERT_EQ(repeat(euro, 85).size(), 255u);
  EXPECT_NO_THROW(check_name(repeat(euro, 85)));
  // 86 characters, 258 bytes.
  EXPECT_SQLSTATE(check_name(repeat(euro, 86)), "22023");
  // 128 characters, 256 bytes: fewer characters than the limit, too many bytes.
  ASSERT_EQ(repeat(e_acute, 128).size(), 256u);
  EXPECT_SQLSTATE(check_name(repeat(e_acute, 128)), "22023");
  // 127 two-byte characters and one ASCII byte: 255 bytes.
  EXPECT_NO_THROW(check_name(repeat(e_acute, 127) + "x"));
}

TEST(CheckName, TooLongDetailGivesTheSize) {
  try {
    check_name(std::string(300, 'n'));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.sqlstate()), "22023");
    EXPECT_NE(e.detail().find("300"), std::string::npos) << e.detail();
    EXPECT_NE(e.detail().find("255"), std::string::npos) << e.detail();
  }
}

TEST(CheckOwner, EmptyIsRejectedWithHint) {
  EXPECT_SQLSTATE(check_owner(""), "22023");
  try {
    check_owner("");
  } catch (const Error& e) {
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(CheckOwner, Exactly255BytesIsAccepted) {
  EXPECT_NO_THROW(check_owner("w"));
  EXPECT_NO_THROW(check_owner(std::string(255, 'w')));
}

TEST(CheckOwner, 256BytesIsRejected) {
  EXPECT_SQLSTATE(check_owner(std::string(256, 'w')), "22023");
}

TEST(CheckOwner, LimitCountsBytesNotCharacters) {
  const std::string euro = "\xE2\x82\xAC";
  const std::string e_acute = "\xC3\xA9";
  EXPECT_NO_THROW(check_owner(repeat(euro, 85)));
  EXPECT_SQLSTATE(check_owner(repeat(euro, 86)), "22023");
  EXPECT_SQLSTATE(check_owner(repeat(e_acute, 128)), "22023");
}

// ----------------------------------------------------------------------- ttl

constexpr Micros kMaxTtl = 24 * kHour;  // dlock.max_ttl's default

TEST(CheckTtl, ZeroIsRejected) {
  EXPECT_SQLSTATE(check_ttl(iv(0), kMaxTtl), "22023");
  // '1 day -24 hours' is zero as well.
  EXPECT_SQLSTATE(check_ttl(iv(-24 * kHour, 1), kMaxTtl), "22023");
}

TEST(CheckTtl, NegativeIsRejected) {
  EXPECT_SQLSTATE(check_ttl(iv(-1), kMaxTtl), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(0, -1), kMaxTtl), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, -1), kMaxTtl), "22023");
  // '1 day -24:00:00.000001' is one microsecond short of zero.
  EXPECT_SQLSTATE(check_ttl(iv(-24 * kHour - 1, 1), kMaxTtl), "22023");
}

TEST(CheckTtl, OneMicrosecondIsAccepted) {
  EXPECT_EQ(check_ttl(iv(1), kMaxTtl), 1);
  EXPECT_EQ(check_ttl(iv(-24 * kHour + 1, 1), kMaxTtl), 1);
}

TEST(CheckTtl, ExactlyMaxIsAccepted) {
  EXPECT_EQ(check_ttl(iv(kMaxTtl), kMaxTtl), kMaxTtl);
  EXPECT_EQ(check_ttl(iv(0, 1), kMaxTtl), kMaxTtl);
}

TEST(CheckTtl, MaxPlusOneIsRejected) {
  EXPECT_SQLSTATE(check_ttl(iv(kMaxTtl + 1), kMaxTtl), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(1, 1), kMaxTtl), "22023");
  try {
    check_ttl(iv(kMaxTtl + 1), kMaxTtl);
  } catch (const Error& e) {
    EXPECT_FALSE(e.detail().empty());
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(CheckTtl, MonthCountsAs30DaysAgainstMax) {
  const Micros thirty_days = 30 * kMicrosPerDay;
  EXPECT_EQ(check_ttl(iv(0, 0, 1), thirty_days), thirty_days);
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, 1), thirty_days - 1), "22023");
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, 1), kMaxTtl), "22023");
  // '1 mon 1 day' is 31 days; '1 mon -29 days' is one day.
  EXPECT_SQLSTATE(check_ttl(iv(0, 1, 1), thirty_days), "22023");
  EXPECT_EQ(check_ttl(iv(0, -29, 1), kMaxTtl), kMaxTtl);
}

TEST(CheckTtl, OverflowIs22023) {
  EXPECT_SQLSTATE(check_ttl(iv(0, 0, kInt32Max), kInt64Max), "22023");
}

TEST(CheckTtl, MaxTtlOfOneMicrosecond) {
  EXPECT_EQ(check_ttl(iv(1), 1), 1);
  EXPECT_SQLSTATE(check_ttl(iv(2), 1), "22023");
}

// ------------------------------------------------------------------- timeout

TEST(CheckTimeout, ZeroIsAccepted) {
  EXPECT_EQ(check_timeout(iv(0)), 0);
  EXPECT_EQ(check_timeout(iv(-24 * kHour, 1)), 0);
}

TEST(CheckTimeout, PositiveIsExact) {
  EXPECT_EQ(check_timeout(iv(1)), 1);
  EXPECT_EQ(check_timeout(iv(5 * kMicrosPerSecond)), 5 * kMicrosPerSecond);
  EXPECT_EQ(check_timeout(iv(0, 0, 1)), 30 * kMicrosPerDay);
}

TEST(CheckTimeout, NegativeIsRejected) {
  EXPECT_SQLSTATE(check_timeout(iv(-1)), "22023");
  EXPECT_SQLSTATE(check_timeout(iv(0, -1)), "22023");
  EXPECT_SQLSTATE(check_timeout(iv(0, 0, -1)), "22023");
}

TEST(CheckTimeout, OverflowIs22023) {
  EXPECT_SQLSTATE(check_timeout(iv(kInt64Max, 1)), "22023");
}

// ------------------------------------------------------------- decide_grant

constexpr Micros kNow = 1'700'000'000'000'000;  // an arbitrary server clock

LeaseRow row(std::int64_t token, Micros expires_at, bool released,
             bool same_owner) {
  LeaseRow r;
  r.token = token;
  r.expires_at = expires_at;
  r.released = released;
  r.same_owner = same_owner;
  return r;
}

TEST(IsHeld, ExpiryIsExclusive) {
  EXPECT_TRUE(is_held(row(1, kNow + 1, false, false), kNow));
  EXPECT_FALSE(is_held(row(1, kNow, false, false), kNow));
  EXPECT_FALSE(is_held(row(1, kNow - 1, false, false), kNow));
  EXPECT_FALSE(is_held(row(1, kNow + kHour, true, false), kNow));
}

TEST(DecideGrant, NoRowCreates) {
  EXPECT_EQ(decide_grant(std::nullopt, kNow), Grant::create);
}

TEST(DecideGrant, ReleasedTakesNewToken) {
  // Released before its expiry, by either owner.
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, true, false), kNow),
            Grant::new_token);
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, true, true), kNow),
            Grant::new_token);
  // Released and expired.
  EXPECT_EQ(decide_grant(row(7, kNow - kHour, true, false), kNow),
            Grant::new_token);
}

TEST(DecideGrant, ExpiredTakesNewToken) {
  EXPECT_EQ(decide_grant(row(7, kNow - 1, false, false), kNow),
            Grant::new_token);
  EXPECT_EQ(decide_grant(row(7, kNow - kHour, false, true), kNow),
            Grant::new_token);
}

TEST(DecideGrant, ExpiringExactlyNowCountsAsExpired) {
  EXPECT_EQ(decide_grant(row(7, kNow, false, false), kNow), Grant::new_token);
  // Even for the same owner: the old grant is over, so the token changes.
  EXPECT_EQ(decide_grant(row(7, kNow, false, true), kNow), Grant::new_token);
}

TEST(DecideGrant, HeldByOtherIsBusy) {
  EXPECT_EQ(decide_grant(row(7, kNow + 1, false, false), kNow), Grant::busy);
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, false, false), kNow),
            Grant::busy);
}

TEST(DecideGrant, HeldBySameOwnerKeepsToken) {
  EXPECT_EQ(decide_grant(row(7, kNow + 1, false, true), kNow),
            Grant::same_token);
  EXPECT_EQ(decide_grant(row(7, kNow + kHour, false, true), kNow),
            Grant::same_token);
}

// ------------------------------------------------------------- why_not_held

TEST(WhyNotHeld, NoRowIsNeverGranted) {
  EXPECT_EQ(why_not_held(std::nullopt, 1, kNow), NotHeld::never_granted);
}

TEST(WhyNotHeld, TokenNewerThanAnyGrantIsNeverGranted) {
  // Even when the row is held, released or expired.
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, false, false), 8, kNow),
            NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, true, false), 8, kNow),
            NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row(7, kNow - kHour, false, false), 8, kNow),
            NotHeld::never_granted);
}

TEST(WhyNotHeld, OlderTokenIsNewerToken) {
  // The token comparison wins over the row's state.
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, false, false), 6, kNow),
            NotHeld::newer_token);
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, true, false), 1, kNow),
            NotHeld::newer_token);
  EXPECT_EQ(why_not_held(row(7, kNow - kHour, false, false), 6, kNow),
            NotHeld::newer_token);
}

TEST(WhyNotHeld, ReleasedWinsOverExpired) {
  EXPECT_EQ(why_not_held(row(7, kNow + kHour, true, false), 7, kNow),
            NotHeld::released);
  EXPECT_EQ(why_not_held(row(7, kNow - kHour, true, false), 7, kNow),
            NotHeld::released);
}

TEST(WhyNotHeld, Expired) {
  EXPECT_EQ(why_not_held(row(7, kNow - 1, false, false), 7, kNow),
            NotHeld::expired);
  EXPECT_EQ(why_not_held(row(7, kNow, false, false), 7, kNow),
            NotHeld::expired);
}

TEST(WhyNotHeld, Held) {
  EXPECT_EQ(why_not_held(row(7, kNow + 1, false, false), 7, kNow),
            NotHeld::held);
  EXPECT_EQ(why_not_held(row(7, kNow + 1, false, true), 7, kNow),
            NotHeld::held);
}

// ------------------------------------------------------------------ describe

TEST(Describe, EveryReasonHasItsOwnText) {
  const NotHeld all[] = {NotHeld::held, NotHeld::never_granted,
                         NotHeld::released, NotHeld::expired,
                         NotHeld::newer_token};
  std::set<std::string> texts;
  for (NotHeld reason : all) {
    const char* text = describe(reason);
    ASSERT_NE(text, nullptr);
    EXPECT_GT(std::strlen(text), 0u);
    // A DETAIL sentence: the caller appends the period.
    EXPECT_NE(text[std::strlen(text) - 1], '.') << text;
    texts.insert(text);
  }
  EXPECT_EQ(texts.size(), sizeof all / sizeof all[0]);
}

}  // namespace
}  // namespace dlock

namespace dlock {
namespace {

// Lock-delay: an unreleased expiry keeps the lease busy until
// expires_at + lock_delay; a release frees it at once.
TEST(LockDelay, BusyUntilExpiryPlusDelay) {
  LeaseRow row{5, 1'000, false, false, 500};
  EXPECT_EQ(free_at(row), 1'500);
  EXPECT_EQ(decide_grant(row, 999), Grant::busy);
  EXPECT_EQ(decide_grant(row, 1'000), Grant::busy);
  EXPECT_EQ(decide_grant(row, 1'499), Grant::busy);
  EXPECT_EQ(decide_grant(row, 1'500), Grant::new_token);
  row.same_owner = true;
  EXPECT_EQ(decide_grant(row, 999), Grant::same_token);
  EXPECT_EQ(decide_grant(row, 1'200), Grant::busy);
  row.released = true;
  EXPECT_EQ(free_at(row), 0);
  EXPECT_EQ(decide_grant(row, 999), Grant::new_token);
}

TEST(CappedExpiry, NeverPastAcquiredAtPlusMaxHold) {
  EXPECT_EQ(capped_expiry(100, 50, 0, 0), 150);      // no max_hold
  EXPECT_EQ(capped_expiry(100, 50, 0, 1'000), 150);  // under the cap
  EXPECT_EQ(capped_expiry(100, 50, 0, 120), 120);    // capped
  EXPECT_EQ(capped_expiry(100, 50, 80, 40), 120);    // cap already near
}

TEST(CheckOptionalDuration, AbsentZeroPositiveAndLimits) {
  EXPECT_EQ(check_optional_duration(std::nullopt, "lock_delay", 1'000), 0);
  EXPECT_EQ(check_optional_duration(iv(0), "lock_delay", 1'000), 0);
  EXPECT_EQ(check_optional_duration(iv(1'000), "lock_delay", 1'000), 1'000);
  EXPECT_EQ(sqlstate_of([] { check_optional_duration(iv(-1), "lock_delay", 1'000); }),
            "22023");
  EXPECT_EQ(sqlstate_of([] { check_optional_duration(iv(1'001), "max_hold", 1'000); }),
            "22023");
}

}  // namespace
}  // namespace dlock
