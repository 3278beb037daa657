// What dlock says on stderr: one "dlock: ..." line per message, and
// failed connections and statements as "SQLSTATE: message (detail)".
#pragma once

#include <string>

#include <dlock/pq.h>

namespace dlock::cli {

// A pq::Error on one line: its SQLSTATE (when there is one: libpq's own
// failures have none), its message, and the server's DETAIL in
// parentheses when there is one. libpq's continuation lines ("\n\tIs the
// server running ...") are joined with single spaces. When the server does
// not know dlock's schema (3F000) or one of its functions (42883), a hint
// in parentheses follows: CREATE EXTENSION dlock (or ALTER EXTENSION).
std::string error_text(const pq::Error& e);

// Writes "dlock: " + text and a newline to stderr, in one write.
void say(const std::string& text);

}  // namespace dlock::cli
