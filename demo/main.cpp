// dlock demo: six worker processes race for the lease "nightly-report".
//
// Each worker loops: wait for the lease with dlock.acquire(), record the
// hold in dlock_demo.holds (in the grant's own transaction, so a recorded
// hold and a granted lease are the same thing), prepare the report for
// 100-400 ms, write it to the row dlock_demo.report with
// dlock.fenced_update() and its token, release, and record how the write
// and the hold ended. Midway, the director (the parent process) finds the
// current holder in dlock.leases and disrupts it: a scene.
//
//   1. A holder dies: SIGKILL. Its lease stays held until it expires on the
//      server clock, and only then does another worker take over, with a
//      higher token.
//   2. A holder pauses: SIGSTOP while it prepares its write, like a long
//      garbage-collection pause. Its lease expires, another worker takes
//      over with a higher token and writes the report. When the paused
//      worker is resumed (SIGCONT) it still believes it holds the lease and
//      sends its write: the report row carries the newer token in its fence
//      column, so dlock.fenced_update() rejects the write with SQLSTATE
//      LD001 and the row keeps the newer holder's write.
//
// At the end the director prints the timeline, the dlock.leases view and
// checks computed by SQL from the holds and report tables, and exits
// non-zero if one fails.
//
// Adding a scene means one more entry in scenes() (scenes.cpp): the
// director finds a fresh holder, plays the scene, waits for the takeover
// and runs the scene's after_takeover(). A worker whose release returns
// false records its hold as 'lost', which the timeline and the checks
// treat like a killed hold (it ended at its expiry).
//
// The files: demo.h (what all parts share), worker.cpp (a worker's loop),
// director.{h,cpp} (the parent process), scenes.cpp (the disruptions),
// report.{h,cpp} (the timeline and the checks). Forking, signalling and
// reaping the workers is test/support/forked_workers.{h,cpp}, which the
// stress tests and the soak share.
#include <cstdio>
#include <exception>
#include <string>

#include "demo.h"
#include "director.h"
#include "forked_workers.h"
#include <dlock/pq.h>

namespace demo {

namespace {

// Creates the demo's tables afresh and returns the server clock at the
// start. Uses its own connection, closed before any fork.
std::string set_up_database() {
  dlock::pq::Connection c;
  c.exec("SET client_min_messages = warning");
  dlock::pq::Result ext =
      c.exec("SELECT count(*) FROM pg_extension WHERE extname = 'dlock'");
  if (ext.int64(0, 0) != 1) {
    throw dlock::pq::Error("",
                           "the dlock extension is not installed in this "
                           "database; run CREATE EXTENSION dlock first");
  }
  c.exec("DROP SCHEMA IF EXISTS dlock_demo CASCADE");
  c.exec("CREATE SCHEMA dlock_demo");
  c.exec(
      "CREATE TABLE dlock_demo.holds ("
      "  token       bigint PRIMARY KEY,"
      "  worker      int NOT NULL,"
      "  acquired_at timestamptz NOT NULL,"
      "  expires_at  timestamptz NOT NULL,"
      "  released_at timestamptz,"
      "  ended       text CHECK (ended IN ('released', 'killed', 'lost')),"
      "  wrote       text CHECK (wrote IN ('accepted', 'rejected', 'no row')),"
      "  wrote_at    timestamptz,"
      "  write_error text)");
  // The shared resource the lease protects: one report row, written only
  // through dlock.fenced_update(), which keeps the writer's token in
  // fence_token.
  c.exec(
      "CREATE TABLE dlock_demo.report ("
      "  name        text PRIMARY KEY,"
      "  written_by  text,"
      "  written_at  timestamptz,"
      "  fence_token bigint)");
  c.exec("INSERT INTO dlock_demo.report (name) VALUES ($1)", kLease);
  return c.exec("SELECT clock_timestamp()").value(0, 0);
}

}  // namespace

}  // namespace demo

int main() {
  try {
    std::string t0 = demo::set_up_database();
    forked::SharedMemory<demo::Shared> shared;
    demo::Director director(*shared, t0);
    return director.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlock_demo: %s\n", e.what());
    return 2;
  }
}
