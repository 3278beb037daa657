// Durations on dlock's command line: "500ms", "30s", "5m", "1h", "2d" and
// runs of them ("1m30s"), read here; any other text ("90 seconds",
// "00:01:30") is a PostgreSQL interval, which only the server reads
// (server_durations.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace dlock::cli {

using Millis = std::chrono::milliseconds;

// A duration as the user wrote it; millis is set once it is known (at once
// for the short forms, after the server has read the others).
struct Duration {
  std::string text;
  std::optional<Millis> millis;
};

// The longest duration dlock takes, either way: 100 years of 365.25 days
// (as the server counts '100 years'), far below the 64-bit milliseconds
// and the PostgreSQL intervals dlock sends.
inline constexpr Millis kLongestDuration{36525LL * 86400 * 1000};

// The short forms: one or more <digits><unit>, units d, h, m, s, ms, each
// at most once and largest first. nullopt for any other text, and for a
// value too large for 64-bit milliseconds (the server then says why).
std::optional<Millis> parse_short_duration(std::string_view text);

// text, read at once when it is in a short form.
Duration duration_from_text(std::string text);

// Milliseconds as seconds with three decimals: 29998 ms -> "29.998".
std::string seconds_text(Millis d);

}  // namespace dlock::cli
