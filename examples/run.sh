#!/usr/bin/env bash
# Runs the client examples (psql, Python, Node.js, C++) on a throwaway
# cluster, each in six scenarios, each scenario in a fresh database:
#   happy    the job takes the lease, writes the report, renews, releases;
#   busy     another worker holds the lease: the job says so, writes nothing;
#   lost     the lease is force-released while the job waits in its work (on
#            a lock this script holds on sales): it stops, writes nothing more;
#   taken    as lost, and another worker takes the lease and writes the row;
#   missing  the report row is deleted first: the job's write updates no row,
#            so it releases the lease, says so and writes nothing more;
#   vanished as missing, the row deleted while the job waits in its work.
# Each checks the job's exit status and stdout exactly, and the report row
# and the lease afterwards. dlock must be installed as scripts/test.sh
# installs it: the extension into PG_BIN's PostgreSQL, the client library
# under /usr/local (or a prefix in CMAKE_PREFIX_PATH). Needs python3,
# python3-psycopg2, nodejs and npm (npm ci fetches pg from the npm registry).
# Usage: bash examples/run.sh [LANGUAGE...]   (psql python node cpp: all by default)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

EXAMPLES=$DLOCK_ROOT/examples
WORK=$(mktemp -d /tmp/dlock-examples.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

log "installing the Node.js example's dependencies (npm ci)"
cp -r "$EXAMPLES/node" "$WORK/node"
(cd "$WORK/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
log "building the C++ example against the installed client library"
cmake -S "$EXAMPLES/cpp" -B "$WORK/cpp" >/dev/null
cmake --build "$WORK/cpp" >/dev/null

start_cluster
trap 'stop_cluster; rm -rf "$WORK"' EXIT

LANGUAGES=${*:-psql python node cpp}

# Runs LANGUAGE's example, which connects with the PG* variables; Python
# is Debian's, the one python3-psycopg2 is for, whatever else is on the PATH.
job() {
  case $1 in
    psql) timeout 60 psql -X -v ON_ERROR_STOP=1 -f "$EXAMPLES/psql/job.sql" ;;
    python) timeout 60 /usr/bin/python3 "$EXAMPLES/python/job.py" ;;
    node) timeout 60 node "$WORK/node/job.js" ;;
    cpp) timeout 60 "$WORK/cpp/job" ;;
  esac
}

# The exit status each outcome gives: psql cannot choose its own, so busy
# ends normally (its stdout says so), and lost and missing are
# ON_ERROR_STOP's 3 (its error says which).
busy_status() { if [ "$1" = psql ]; then echo 0; else echo 75; fi; }
lost_status() { if [ "$1" = psql ]; then echo 3; else echo 76; fi; }
missing_status() { if [ "$1" = psql ]; then echo 3; else echo 1; fi; }

sql() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

# A database of its own for each scenario, so every first grant is token 1.
databases=0
fresh_database() {
  databases=$((databases + 1))
  export PGDATABASE=examples_$databases
  createdb -T template0 "$PGDATABASE"
  psql -Xq -v ON_ERROR_STOP=1 -f "$EXAMPLES/setup.sql" >/dev/null
}

# check WHAT EXPECTED ACTUAL
check() {
  [ "$2" = "$3" ] && return 0
  printf '  %s: expected\n%s\n  got\n%s\n' "$1" "$2" "$3" >&2
  ok=false
}

# Polls SQL until it returns true, for up to 60 s, or until the process
# PID (if given) has ended; else the scenario fails.
wait_until() {
  local i
  for ((i = 0; i < 600; i++)); do
    [ "$(sql "$1")" = t ] && return 0
    if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then
      printf '  the job ended before: %s\n' "$1" >&2
      ok=false
      return 0
    fi
    sleep 0.1
  done
  printf '  timed out waiting for: %s\n' "$1" >&2
  ok=false
}

# Runs LANGUAGE's example; sets status, out (stdout) and err (stderr).
run_job() {
  status=0
  job "$1" >"$WORK/out" 2>"$WORK/err" || status=$?
  out=$(cat "$WORK/out")
  err=$(cat "$WORK/err")
}

scenario_happy() {
  fresh_database
  run_job "$1"
  check "exit status" 0 "$status"
  check stdout "granted token=1
wrote running with token 1
renewed
wrote done with token 1
released" "$out"
  check stderr "" "$err"
  check "report row" "done|199.75|1" "$(sql "SELECT status, total, fence_token FROM reports")"
  check "lease" "1|released|t" "$(sql "SELECT token, state, renew_count > 0
    FROM dlock.leases WHERE name = 'nightly-report'")"
}

scenario_busy() {
  fresh_database
  check "the other worker's grant" 1 "$(sql "SELECT token FROM dlock.try_acquire(
    'nightly-report', '5 min', owner => 'other-worker')")"
  run_job "$1"
  check "exit status" "$(busy_status "$1")" "$status"
  check stdout "busy: nightly-report is held by other-worker" "$out"
  check stderr "" "$err"
  check "report row" "pending||" "$(sql "SELECT status, total, fence_token FROM reports")"
  check "lease" "1|other-worker" "$(sql "SELECT token, owner FROM dlock.get('nightly-report')")"
}

# run_job_losing LANGUAGE SQL EXPECTED: runs LANGUAGE's job while this
# script holds sales locked, so the job's work (its sum of sales) waits;
# once it waits, runs SQL, checks that it printed EXPECTED, and lets the job
# go on. Sets status, out and err.
run_job_losing() {
  local this_db="database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND relation = 'sales'::regclass"
  coproc LOCKER { psql -Xq -v ON_ERROR_STOP=1 >/dev/null; }
  # shellcheck disable=SC2153 # coproc sets LOCKER_PID
  local locker_in=${LOCKER[1]} locker_pid=$LOCKER_PID
  echo "BEGIN; LOCK TABLE sales IN ACCESS EXCLUSIVE MODE;" >&"$locker_in"
  wait_until "SELECT EXISTS (SELECT FROM pg_locks WHERE $this_db AND granted)"
  job "$1" >"$WORK/out" 2>"$WORK/err" &
  local job_pid=$!
  # Waiting for sales, the job has its grant and has written and renewed.
  wait_until "SELECT EXISTS (SELECT FROM pg_locks WHERE $this_db AND NOT granted)" "$job_pid"
  check "what happens while the job waits" "$3" "$(sql "$2")"
  echo "COMMIT;" >&"$locker_in"
  exec {locker_in}>&-
  wait "$locker_pid" || true
  status=0
  wait "$job_pid" || status=$?
  out=$(cat "$WORK/out")
  err=$(cat "$WORK/err")
}

# check_lost LANGUAGE REASON...: the job stopped after its first write and
# renewal, and said why (one of the REASONs) on stderr.
check_lost() {
  local language=$1 reason
  shift
  check "exit status" "$(lost_status "$language")" "$status"
  check stdout "granted token=1
wrote running with token 1
renewed" "$out"
  for reason in "$@"; do
    case $err in *"$reason"*) return 0 ;; esac
  done
  check "stderr (why the lease was lost)" "$*" "$err"
}

FORCE_RELEASE="SELECT token FROM dlock.force_release('nightly-report', 'examples test')"

# An administrator force-releases the lease: renewals and assert_held
# answer LD002.
scenario_lost() {
  fresh_database
  run_job_losing "$1" "$FORCE_RELEASE" 1
  check_lost "$1" "force-released by postgres: examples test"
  check "report row" "running||1" "$(sql "SELECT status, total, fence_token FROM reports")"
  check "lease" "1|released|postgres" "$(sql "SELECT token, state, forced_by
    FROM dlock.leases WHERE name = 'nightly-report'")"
}

# As lost, and another worker takes the lease and writes the row with its
# newer token before the job goes on: assert_held answers LD001. The C++
# job's keeper may see the force-release first.
scenario_taken() {
  fresh_database
  run_job_losing "$1" "$FORCE_RELEASE;
    SELECT token FROM dlock.try_acquire('nightly-report', '5 min', owner => 'other-worker');
    SELECT dlock.fenced_update('reports', 2, '{\"status\": \"redone\"}',
                               '{\"day\": \"2026-11-30\"}')" \
    $'1\n2\n1'
  if [ "$1" = cpp ]; then
    check_lost "$1" "fencing token 1 is stale" "force-released by postgres: examples test"
  else
    check_lost "$1" "fencing token 1 is stale"
  fi
  check "report row" "redone||2" "$(sql "SELECT status, total, fence_token FROM reports")"
  check "lease" "2|held|other-worker" "$(sql "SELECT token, state, owner
    FROM dlock.leases WHERE name = 'nightly-report'")"
}

# check_missing LANGUAGE STDOUT RENEWED: the job found no report row to
# write after STDOUT, so it stopped, released the lease (renewed: t or f)
# and said so on stderr, psql in the error that stops it (after psql's
# "psql:FILE:LINE: "); the tables are as the test left them.
check_missing() {
  check "exit status" "$(missing_status "$1")" "$status"
  check stdout "$2" "$out"
  if [ "$1" = psql ]; then
    check stderr "ERROR:  no report row for 2026-11-30" \
      "$(sed -E '1s/^psql:[^:]+:[0-9]+: //' <<<"$err")"
  else
    check stderr "failed: no report row for 2026-11-30" "$err"
  fi
  check "reports" 0 "$(sql "SELECT count(*) FROM reports")"
  check "sales" "2026-11-30|79.25
2026-11-30|120.50
2026-12-01|10" "$(sql "SELECT day, amount FROM sales ORDER BY day, amount")"
  check "lease" "1|released|t|$3" "$(sql "SELECT token, state, forced_by IS NULL,
    renew_count > 0 FROM dlock.leases WHERE name = 'nightly-report'")"
}

# The report row is deleted before the run: the job's first write updates
# no row.
scenario_missing() {
  fresh_database
  sql "DELETE FROM reports"
  run_job "$1"
  check_missing "$1" "granted token=1" f
}

# The report row is deleted while the job works: its second write updates
# no row.
scenario_vanished() {
  fresh_database
  run_job_losing "$1" "DELETE FROM reports" ""
  check_missing "$1" "granted token=1
wrote running with token 1
renewed" t
}

passed=0
failed=0
for language in $LANGUAGES; do
  for scenario in happy busy lost taken missing vanished; do
    ok=true
    "scenario_$scenario" "$language"
    if $ok; then
      passed=$((passed + 1))
      log "$language $scenario: ok"
    else
      failed=$((failed + 1))
      log "$language $scenario: FAILED (the job's stderr follows)"
      cat "$WORK/err" >&2
    fi
  done
done
echo "examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
