#include "durations.h"

#include <cstdint>
#include <limits>

namespace dlock::cli {

namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t millis;
};

// "ms" before "m", so that the longer suffix wins.
constexpr Unit kUnits[] = {
    {"d", 86400000}, {"h", 3600000}, {"ms", 1}, {"m", 60000}, {"s", 1000},
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<Millis> parse_short_duration(std::string_view text) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t total = 0;
  std::int64_t previous_unit = kMax;  // units must get smaller
  std::size_t i = 0;
  if (text.empty()) return std::nullopt;
  while (i < text.size()) {
    std::int64_t n = 0;
    std::size_t digits = 0;
    for (; i < text.size() && is_digit(text[i]); ++i, ++digits) {
      int d = text[i] - '0';
      if (n > (kMax - d) / 10) return std::nullopt;
      n = n * 10 + d;
    }
    if (digits == 0) return std::nullopt;
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(i, u.suffix.size()) == u.suffix) {
        unit = &u;
        break;
      }
    }
    if (!unit || unit->millis >= previous_unit) return std::nullopt;
    previous_unit = unit->millis;
    i += unit->suffix.size();
    if (n > (kMax - total) / unit->millis) return std::nullopt;
    total += n * unit->millis;
  }
  return Millis(total);
}

Duration duration_from_text(std::string text) {
  Duration d;
  d.millis = parse_short_duration(text);
  d.text = std::move(text);
  return d;
}

std::string seconds_text(Millis d) {
  std::int64_t ms = d.count();
  std::string sign = ms < 0 ? "-" : "";
  std::uint64_t magnitude = ms < 0 ? 0 - static_cast<std::uint64_t>(ms)
                                   : static_cast<std::uint64_t>(ms);
  std::string fraction = std::to_string(magnitude % 1000);
  fraction.insert(0, 3 - fraction.size(), '0');
  return sign + std::to_string(magnitude / 1000) + "." + fraction;
}

}  // namespace dlock::cli
