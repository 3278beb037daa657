#include "report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "demo.h"

namespace demo {

namespace {

// A query's result laid out like psql's aligned format.
void print_table(const dlock::pq::Result& r) {
  std::vector<std::size_t> width(r.cols());
  for (int c = 0; c < r.cols(); ++c) {
    width[c] = r.column_name(c).size();
    for (int i = 0; i < r.rows(); ++i) {
      width[c] = std::max(width[c], r.value(i, c).size());
    }
  }
  auto line = [&](auto cell, char pad, const char* sep) {
    std::string out = "  ";
    for (int c = 0; c < r.cols(); ++c) {
      std::string v = cell(c);
      out += (c ? sep : "") + std::string(1, pad) + v +
             std::string(width[c] - v.size() + 1, pad);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::printf("%s\n", out.c_str());
  };
  line([&](int c) { return r.column_name(c); }, ' ', "|");
  line([&](int) { return std::string(); }, '-', "+");
  for (int i = 0; i < r.rows(); ++i) {
    line([&](int c) { return r.value(i, c); }, ' ', "|");
  }
  std::printf("  (%d row%s)\n", r.rows(), r.rows() == 1 ? "" : "s");
}

}  // namespace

std::string two_decimals(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", seconds);
  return text;
}

void print_timeline(dlock::pq::Connection& db, const std::string& t0,
                    const RunNotes& notes) {
  dlock::pq::Result r = db.exec(
      "SELECT worker, token,"
      "       to_char(extract(epoch FROM acquired_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       to_char(extract(epoch FROM coalesce(released_at, expires_at)"
      "                                 - acquired_at), 'FM990.000'),"
      "       coalesce(ended, 'still held'),"
      "       to_char(extract(epoch FROM expires_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       lag(worker) OVER w, lag(ended) OVER w,"
      "       coalesce(wrote, '-'),"
      "       to_char(extract(epoch FROM wrote_at - $1::timestamptz),"
      "               'FM990.000')"
      "  FROM dlock_demo.holds WINDOW w AS (ORDER BY token)"
      " ORDER BY token",
      t0);
  std::printf(
      "\nTimeline of lease \"%s\" (seconds since the start, server "
      "clock)\n\n",
      kLease);
  std::printf("  %9s  %-9s  %6s  %8s  %-15s  %s\n", "acquired", "holder",
              "token", "held", "fenced write", "how the hold ended");
  std::printf("  %9s  %-9s  %6s  %8s  %-15s  %s\n", "---------", "---------",
              "------", "--------", "---------------", "------------------");
  for (int i = 0; i < r.rows(); ++i) {
    const std::int64_t token = r.int64(i, 1);
    const bool paused = notes.pause && notes.pause->token == token;
    std::string ended = r.value(i, 4);
    std::string how = ended;
    if (ended == "killed") {
      how = "killed (SIGKILL); lease expired at +" + r.value(i, 5) + " s";
    } else if (ended == "lost" && paused) {
      how = "paused (SIGSTOP) " + two_decimals(notes.pause->paused_s) +
            " s; lease expired at +" + r.value(i, 5) +
            " s; its write came at +" + r.value(i, 9) + " s";
    } else if (ended == "lost") {
      how = "lost: release came too late; lease expired at +" + r.value(i, 5) +
            " s";
    }
    std::string prev = r.value(i, 7);
    if (prev == "killed" || prev == "lost") {
      how += "   <- took over from worker-" + r.value(i, 6);
    }
    std::string wrote = r.value(i, 8);
    if (wrote == "rejected") wrote = "REJECTED LD001";
    std::printf("  %+8.3fs  worker-%-2s  %6s  %7ss  %-15s  %s\n",
                std::stod(r.value(i, 2)), r.value(i, 0).c_str(),
                r.value(i, 1).c_str(), r.value(i, 3).c_str(), wrote.c_str(),
                how.c_str());
  }
}

void print_leases_view(dlock::pq::Connection& db) {
  dlock::pq::Result r = db.exec(
      "SELECT name, owner, token, state,"
      "       to_char(acquired_at, 'HH24:MI:SS.MS') AS acquired_at,"
      "       to_char(expires_at, 'HH24:MI:SS.MS') AS expires_at,"
      "       valid_for, ttl,"
      "       to_char(released_at, 'HH24:MI:SS.MS') AS released_at,"
      "       acquired_by"
      "  FROM dlock.leases WHERE name = $1",
      kLease);
  std::printf(
      "\nSELECT * FROM dlock.leases;   (times of day, server clock)\n\n");
  print_table(r);
}

void print_report_row(dlock::pq::Connection& db) {
  dlock::pq::Result r = db.exec(
      "SELECT name, written_by,"
      "       to_char(written_at, 'HH24:MI:SS.MS') AS written_at, fence_token"
      "  FROM dlock_demo.report WHERE name = $1",
      kLease);
  std::printf(
      "\n  SELECT * FROM dlock_demo.report;   (right after the paused"
      " holder's late write)\n\n");
  print_table(r);
  std::printf("\n");
}

bool run_checks(dlock::pq::Connection& db, const std::string& t0,
                const RunNotes& notes) {
  std::printf(
      "\nChecks, computed by SQL from dlock_demo.holds and "
      "dlock_demo.report\n\n");
  bool all_ok = true;
  auto check = [&](bool ok, const std::string& what) {
    std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
    all_ok = all_ok && ok;
  };

  // A hold ends when it is released; a hold that was never released
  // (killed, or lost) ends when its lease expires.
  dlock::pq::Result s = db.exec(
      "WITH h AS ("
      "  SELECT token, acquired_at, ended,"
      "         CASE WHEN ended = 'released' THEN released_at"
      "              ELSE expires_at END AS hold_end"
      "    FROM dlock_demo.holds),"
      " o AS ("
      "  SELECT h.*, lag(hold_end) OVER w AS prev_end,"
      "         lag(token) OVER w AS prev_token"
      "    FROM h WINDOW w AS (ORDER BY acquired_at, token))"
      " SELECT count(*),"
      "        count(*) FILTER (WHERE acquired_at < prev_end"
      "                            OR hold_end IS NULL),"
      "        count(*) FILTER (WHERE token <= prev_token),"
      "        count(*) FILTER (WHERE ended IS DISTINCT FROM 'released'),"
      "        min(token), max(token)"
      "   FROM o");
  const std::int64_t holds = s.int64(0, 0);
  const std::int64_t overlaps = s.int64(0, 1);
  const std::int64_t regressions = s.int64(0, 2);
  const std::int64_t unreleased = s.int64(0, 3);
  check(holds >= 2 && overlaps == 0,
        std::to_string(holds) + " holds, " + std::to_string(overlaps) +
            " overlapping: each began at or after the previous one ended");
  check(holds >= 2 && regressions == 0,
        "tokens strictly increased in the order the holds began (" +
            (holds ? s.value(0, 4) + " .. " + s.value(0, 5) : "none") + ")");

  // Every disrupted hold: the next hold began only after its lease expired.
  dlock::pq::Result k = db.exec(
      "SELECT k.worker, k.token, k.ended,"
      "       to_char(extract(epoch FROM k.expires_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       n.worker, n.token,"
      "       to_char(extract(epoch FROM n.acquired_at - $1::timestamptz),"
      "               'FM990.000'),"
      "       round(extract(epoch FROM n.acquired_at - k.expires_at) * 1000)"
      "         ::bigint,"
      "       n.token IS NOT NULL AND n.acquired_at >= k.expires_at"
      "                           AND n.token > k.token"
      "  FROM dlock_demo.holds AS k"
      "  LEFT JOIN LATERAL (SELECT * FROM dlock_demo.holds AS x"
      "                      WHERE x.token > k.token"
      "                      ORDER BY x.token LIMIT 1) AS n ON true"
      " WHERE k.ended IS DISTINCT FROM 'released'"
      " ORDER BY k.token",
      t0);
  for (int i = 0; i < k.rows(); ++i) {
    if (k.isnull(i, 5)) {
      check(false, "worker-" + k.value(i, 0) + "'s hold (token " +
                       k.value(i, 1) + ", " + k.value(i, 2) +
                       ") was never taken over");
      continue;
    }
    const std::int64_t gap_ms = k.int64(i, 7);
    const bool paused = notes.pause && notes.pause->token == k.int64(i, 1);
    check(k.boolean(i, 8),
          "worker-" + k.value(i, 0) + " was " +
              (paused ? std::string("paused") : k.value(i, 2)) +
              " holding token " + k.value(i, 1) + "; its lease expired at +" +
              k.value(i, 3) + " s and worker-" + k.value(i, 4) +
              " took over at +" + k.value(i, 6) + " s with token " +
              k.value(i, 5) + " (" +
              std::to_string(gap_ms < 0 ? -gap_ms : gap_ms) + " ms " +
              (gap_ms < 0 ? "BEFORE" : "after") + " the expiry)");
  }
  check(notes.scenes_hit == notes.scenes_planned,
        "scenes that hit a holder while it held the lease: " +
            std::to_string(notes.scenes_hit) + " of " +
            std::to_string(notes.scenes_planned));
  check(unreleased == notes.scenes_hit,
        "every hold not hit by a scene ended with a successful release (" +
            std::to_string(holds - unreleased) + " released, " +
            std::to_string(unreleased) + " not)");

  // The fenced writes, in the order they were made.
  dlock::pq::Result f = db.exec(
      "WITH a AS ("
      "  SELECT token, worker, lag(token) OVER (ORDER BY wrote_at, token)"
      "                        AS prev_token"
      "    FROM dlock_demo.holds WHERE wrote = 'accepted')"
      " SELECT (SELECT count(*) FROM a),"
      "        (SELECT count(*) FROM a WHERE token <= prev_token),"
      "        (SELECT count(*) FROM dlock_demo.holds"
      "          WHERE wrote = 'rejected'),"
      "        (SELECT count(*) FROM dlock_demo.holds"
      "          WHERE wrote = 'rejected' AND ended IS DISTINCT FROM 'lost'),"
      "        (SELECT count(*) FROM dlock_demo.holds WHERE wrote = 'no row'),"
      "        (SELECT count(*) FROM dlock_demo.holds"
      "          WHERE ended = 'released'"
      "            AND wrote IS DISTINCT FROM 'accepted'),"
      "        (SELECT fence_token IS NOT DISTINCT FROM"
      "                (SELECT max(token) FROM a)"
      "            AND written_by IS NOT DISTINCT FROM"
      "                (SELECT 'worker-' || worker FROM a"
      "                  ORDER BY token DESC LIMIT 1)"
      "           FROM dlock_demo.report WHERE name = $1),"
      "        (SELECT fence_token FROM dlock_demo.report WHERE name = $1)",
      kLease);
  const std::int64_t accepted = f.int64(0, 0);
  const std::int64_t rejected = f.int64(0, 2);
  check(accepted >= 2 && f.int64(0, 1) == 0,
        std::to_string(accepted) +
            " fenced writes accepted, each with a higher token than the"
            " write before it");
  check(f.int64(0, 4) == 0 && f.int64(0, 5) == 0,
        "every hold that released the lease had its fenced write accepted");
  check(rejected >= 1 && f.int64(0, 3) == 0,
        std::to_string(rejected) +
            " fenced write(s) rejected with LD001, each by a holder that had"
            " lost its lease");
  check(!f.isnull(0, 6) && f.boolean(0, 6),
        "the report row holds the last accepted write (fence_token " +
            f.value(0, 7) + ")");
  if (notes.pause) {
    const PauseOutcome& p = *notes.pause;
    check(p.wrote == "rejected" && p.newer_token > p.token &&
              p.row_fence > p.token &&
              p.row_written_by != worker_name(p.worker) &&
              p.paused_s > std::chrono::duration<double>(kTtlDuration).count(),
          worker_name(p.worker) + " was paused " + two_decimals(p.paused_s) +
              " s (ttl " + kTtl + ") holding token " + std::to_string(p.token) +
              "; " + (p.newer_worker ? worker_name(p.newer_worker) : "nobody") +
              " wrote with token " + std::to_string(p.newer_token) +
              " meanwhile; the late write was " +
              (p.wrote == "rejected" ? std::string("rejected with LD001")
               : p.wrote.empty()     ? std::string("never reported")
                                     : "'" + p.wrote + "'") +
              " and the row kept fence_token " + std::to_string(p.row_fence) +
              " (written by " + p.row_written_by + ")");
  }
  return all_ok;
}

}  // namespace demo
