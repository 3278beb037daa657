// Helpers shared by the unit tests of src/core.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "duration.h"
#include "errors.h"

namespace dlock::testing {

inline constexpr Micros kHour = 3600 * kMicrosPerSecond;
inline constexpr Micros kInt64Max = std::numeric_limits<std::int64_t>::max();
inline constexpr Micros kInt64Min = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int32_t kInt32Max =
    std::numeric_limits<std::int32_t>::max();
inline constexpr std::int32_t kInt32Min =
    std::numeric_limits<std::int32_t>::min();

inline IntervalFields iv(Micros time, std::int32_t days = 0,
                         std::int32_t months = 0) {
  IntervalFields f;
  f.time = time;
  f.days = days;
  f.months = months;
  return f;
}

// Runs f, which must throw dlock::Error, and returns that error.
template <typename F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected dlock::Error";
  return Error(sqlstate::internal_error, "none");
}

// The SQLSTATE f throws, or "no error".
template <typename F>
std::string sqlstate_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.sqlstate();
  }
  return "no error";
}

// A string of `n` copies of `unit`.
inline std::string repeat(const std::string& unit, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += unit;
  return s;
}

}  // namespace dlock::testing

#define EXPECT_SQLSTATE(expr, code)                               \
  EXPECT_EQ(::dlock::testing::sqlstate_of([&] { (void)(expr); }), \
            std::string(code))
