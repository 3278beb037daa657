// What dlock says on stderr: one "dlock: ..." line per message, and
// server errors as "SQLSTATE: message".
#pragma once

#include <string>

namespace dlock::cli {

// "LD002: lease \"job\" is not held\nDETAIL:  ...": libpq's message
// without its "ERROR:  " prefix, after the SQLSTATE when there is one.
std::string server_error_text(const std::string& sqlstate,
                              const std::string& message);

// Writes "dlock: " + text and a newline to stderr, in one write.
void say(const std::string& text);

}  // namespace dlock::cli
