// The application_name a lease's sessions show in pg_stat_activity, so that
// operators see who holds and who waits: "<what> <name> (<owner>)", e.g.
// "dlock run nightly-report (web-1:4242:9f2c01ab)". It is given as libpq's
// fallback_application_name, so that a user's application_name (conninfo
// or PGAPPNAME) wins.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlock::client {

// The server keeps the first NAMEDATALEN - 1 bytes of an application_name.
inline constexpr std::size_t kApplicationNameMax = 63;

// "<what> <name> (<owner>)" in kApplicationNameMax bytes at most. When it
// does not fit, the longer of name and owner is cut first (never below
// half of what is left for both), each cut one ending in "..."; a cut
// never splits a UTF-8 character.
std::string application_name(std::string_view what, std::string_view name,
                             std::string_view owner);

}  // namespace dlock::client
