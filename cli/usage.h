// dlock's help texts, and how a usage error is told.
#pragma once

#include <string>
#include <string_view>

namespace dlock::cli {

inline constexpr int kExitUsage = 2;

// The full --help text of a subcommand ("" for dlock itself).
std::string_view help_text(std::string_view topic);

// What a usage error prints on stderr, as coreutils do: the message, the
// topic's synopsis, and where to read more.
std::string usage_error_text(std::string_view topic,
                             const std::string& message);

// Prints usage_error_text() on stderr; returns kExitUsage.
int report_usage_error(std::string_view topic, const std::string& message);

}  // namespace dlock::cli
