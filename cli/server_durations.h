// Durations in PostgreSQL's interval text ("90 seconds", "00:01:30"), read
// by the server: dlock reads only its short forms itself (durations.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "options.h"
#include <dlock/pq.h>

namespace dlock::cli {

// Has the server read each field the client could not, then checks every
// field's floor (check_durations). Returns the usage error ("--ttl: 'soon'
// is not a duration: invalid input syntax ...") or nullopt. Throws
// pq::Error when the server fails other than on the text (class 22).
std::optional<std::string> read_durations(
    pq::Connection& conn, const std::vector<DurationField>& fields);

}  // namespace dlock::cli
