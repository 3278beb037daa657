#include "server_durations.h"

namespace dlock::cli {

std::optional<std::string> read_durations(
    pq::Connection& conn, const std::vector<DurationField>& fields) {
  for (const DurationField& f : fields) {
    Duration& d = *f.value;
    if (d.millis) continue;
    // extract(epoch) counts a day as 24 hours and a month as 30 days, as
    // dlock does (a year, though, as 365.25 days).
    pq::Result r = conn.try_exec(
        "SELECT (extract(epoch FROM $1::pg_catalog.interval)"
        " * 1000)::pg_catalog.int8",
        d.text);
    if (!r.ok()) {
      if (r.sqlstate().compare(0, 2, "22") != 0) r.raise();
      return std::string(f.flag) + ": '" + d.text +
             "' is not a duration: " + r.message();
    }
    d.millis = Millis(r.int64(0, 0));
  }
  return check_durations(fields);
}

}  // namespace dlock::cli
