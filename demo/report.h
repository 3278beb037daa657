// What the demo prints once the workers have stopped: the timeline of
// holds, the dlock.leases view and the checks. All of it is read from the
// tables dlock_demo.holds and dlock_demo.report, plus what the director
// saw itself (RunNotes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <dlock/pq.h>

namespace demo {

// What the pause scene saw.
struct PauseOutcome {
  int worker = 0;
  std::int64_t token = 0;        // the paused holder's
  std::int64_t newer_token = 0;  // the first write after it, accepted
  int newer_worker = 0;
  double paused_s = 0;         // from SIGSTOP to SIGCONT
  std::string wrote;           // the paused holder's write: 'rejected'?
  std::int64_t row_fence = 0;  // the report row right after it
  std::string row_written_by;
};

// What the director saw during the run that the tables do not record.
struct RunNotes {
  int scenes_planned = 0;
  int scenes_hit = 0;  // scenes that hit a holder while it held the lease
  std::optional<PauseOutcome> pause;
};

// Seconds with two decimals, e.g. "2.25".
std::string two_decimals(double seconds);

// t0 is the server clock at the start; times are printed relative to it.
void print_timeline(dlock::pq::Connection& db, const std::string& t0,
                    const RunNotes& notes);
void print_leases_view(dlock::pq::Connection& db);
// The report row; the pause scene shows it right after the late write.
void print_report_row(dlock::pq::Connection& db);
// Prints each check as [ok] or [FAILED]; true if all passed.
bool run_checks(dlock::pq::Connection& db, const std::string& t0,
                const RunNotes& notes);

}  // namespace demo
