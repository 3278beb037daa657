#!/usr/bin/env bash
# Random SQL from sqlsmith against dlock, on a throwaway cluster.
#
#   test/sqlsmith/run.sh [--queries N] [--seed S] [--all] [--keep]
#
# (default 2500 statements, about two minutes). sqlsmith calls only dlock's
# routines and a few of PostgreSQL's that make values (see setup.sql) unless
# given --all, the whole catalog, where one statement in twenty reaches
# dlock. --keep keeps the server log and the statements even when nothing
# crashed.
#
# Expects dlock built and installed into $PG_BIN's PostgreSQL (see
# scripts/lib.sh: build_and_install) and sqlsmith on the PATH (Debian package
# sqlsmith). Creates a database with dlock, leases of every kind, a table
# written with fenced_update and a protected one, then lets sqlsmith send N
# random statements as the role smith: a member of dlock_admin (so force_release
# and sweep are reached too) but no superuser, because a superuser's random
# SQL stops backends (pg_terminate_backend), reads and writes files, changes
# settings and drops what the run needs, which says nothing about dlock.
# Every statement runs under statement_timeout, so acquire and advisory_lock
# waits end.
#
# Fails when the server log shows a backend crash (terminated by signal,
# PANIC, a failed assertion) or dlock's "internal error" (an escaped C++
# exception). Then it keeps the server log (with each crashing statement:
# "Failed process was running: ...") and every statement sent, in a directory
# it prints.
set -euo pipefail

queries=2500
keep=false
all=false
seed=$$
while [ $# -gt 0 ]; do
  case $1 in
  --queries) queries=$2; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --keep) keep=true; shift ;;
  --all) all=true; shift ;;
  *)
    echo "usage: $0 [--queries N] [--seed S] [--all] [--keep]" >&2
    exit 2
    ;;
  esac
done
[[ $queries =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ ]] || {
  echo "usage: $0 [--queries N] [--seed S] [--all] [--keep]" >&2
  exit 2
}

source "$(dirname "$0")/../../scripts/lib.sh"
command -v sqlsmith >/dev/null || {
  echo "$0: sqlsmith not found (Debian: apt-get install sqlsmith)" >&2
  exit 2
}
[ -f "$("$PG_BIN/pg_config" --sharedir)/extension/dlock.control" ] || {
  echo "$0: dlock is not installed into $PG_BIN's PostgreSQL" >&2
  exit 2
}

# The whole statement in the log when a backend dies, not its first 1 kB.
start_cluster "track_activity_query_size = 65536" \
  "log_line_prefix = '%m [%p] %e '"
out=$(mktemp -d -t dlock-sqlsmith.XXXXXX)

psql -XAtq -v ON_ERROR_STOP=1 <<'SQL'
CREATE ROLE smith LOGIN;
CREATE DATABASE smith OWNER smith;
\c smith
CREATE EXTENSION dlock;
GRANT dlock_admin TO smith;
SQL
psql -XAtq -v ON_ERROR_STOP=1 -U smith -d smith \
  -f "$(dirname "$0")/setup.sql" >/dev/null

options="-c statement_timeout=1000 -c lock_timeout=500"
options+=" -c idle_in_transaction_session_timeout=5000"
$all || options+=" -c search_path=focus,pg_catalog,public"
log "sqlsmith: $queries statements, seed $seed$($all && echo ', whole catalog')"
start=$(date +%s)
status=0
sqlsmith --target="host=$PGHOST port=$PGPORT dbname=smith user=smith \
options='$options'" \
  --seed="$seed" --max-queries="$queries" --exclude-catalog --verbose \
  --dump-all-queries >"$out/queries.sql" 2>"$out/sqlsmith.log" || status=$?
elapsed=$(($(date +%s) - start))

cp "$CLUSTER_DIR/server.log" "$out/server.log"
sent=$(grep -c ';$' "$out/queries.sql" || true)
count() { awk -v re="$1" 'BEGIN { RS = ";\n" } $0 ~ re { n++ } END { print n + 0 }' \
  "$out/queries.sql"; }
log "sqlsmith exited $status after ${elapsed} s: $sent statements," \
  "$(count 'dlock[.]') naming dlock's objects," \
  "$(count 'dlock[.][a-z_]+[(]') calling its functions"
tail -n 5 "$out/sqlsmith.log" >&2

crashes='terminated by signal|was terminated by exception|PANIC|TRAP:|server process .* was terminated|internal error in dlock'
if grep -Eq "$crashes" "$out/server.log"; then
  grep -E -A2 "$crashes" "$out/server.log" >&2
  log "crash found; server log and statements kept in $out"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  log "sqlsmith failed; its output kept in $out"
  exit 1
fi
log "no crash"
if $keep; then log "server log and statements kept in $out"; else rm -rf "$out"; fi
