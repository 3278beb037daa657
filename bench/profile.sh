#!/usr/bin/env bash
# Where a lease cycle's server time goes: runs the uncontended cycle of
# each variant with many clients and reports, per cycle, the server's CPU
# time, its WAL flushes and WAL bytes, and the wait events its backends
# were seen in; with PROFILE_PERF=1 also a perf profile of the server.
#
#   bash bench/profile.sh                 # dlock and table, 16 clients
#   PROFILE_FSYNC=off bash bench/profile.sh dlock
#
# Environment: PROFILE_CLIENTS (default 16), PROFILE_SECONDS (default 10),
# PROFILE_FSYNC (on|off, default on), PROFILE_SETTINGS (more
# postgresql.conf lines, separated by ';'), PROFILE_PERF=1 (perf record of the whole
# machine, with PROFILE_PERF_ARGS, e.g. --call-graph=dwarf; the server's
# share goes to bench/results/profile-VARIANT.txt).
# CPU time is exact: the postmaster's own and its children's, live and
# exited, from /proc, so pgbench's own CPU is left out.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

CLIENTS=${PROFILE_CLIENTS:-16}
SECONDS_PER_RUN=${PROFILE_SECONDS:-10}
FSYNC=${PROFILE_FSYNC:-on}
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(dlock table)

ensure_packages linux-perf procps
build_and_install
# PROFILE_SETTINGS: more postgresql.conf lines, separated by ';'.
IFS=';' read -r -a SETTINGS <<<"${PROFILE_SETTINGS:-}"
start_bench_cluster "fsync = $FSYNC" "${SETTINGS[@]}"
WORK=$(mktemp -d /tmp/dlock-profile.XXXXXX)
# What runs beside pgbench (the wait sampler, perf): stopped on any exit.
HELPERS=()
stop_helpers() {
  [ ${#HELPERS[@]} -eq 0 ] || kill -TERM "${HELPERS[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  HELPERS=()
}
trap 'stop_helpers; stop_cluster; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
psql -X -q -v ON_ERROR_STOP=1 -f "$BENCH_DIR/setup.sql"

postmaster_pid() { head -n 1 "$CLUSTER_DIR/data/postmaster.pid"; }

# CPU ticks used so far by the server, "user system": the postmaster's
# (fields 14-17 count its own time and that of the children it has
# reaped) and its live children's.
server_ticks() {
  local pm
  pm=$(postmaster_pid)
  { awk '{ print $14 + $16, $15 + $17 }' "/proc/$pm/stat"
    for child in $(pgrep -P "$pm"); do
      awk '{ print $14, $15 }' "/proc/$child/stat" 2>/dev/null || true
    done
  } | awk '{ u += $1; s += $2 } END { print u, s }'
}

# Samples the wait events of pgbench's backends every 10 ms until $1 exists.
sample_waits() {
  while [ ! -e "$1" ]; do
    psql -X -At -c "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
                      FROM pg_stat_activity WHERE application_name = 'pgbench'"
    sleep 0.01
  done
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }

mkdir -p "$BENCH_DIR/results"
TICK=$(getconf CLK_TCK)
report_header "dlock profile: $CLIENTS clients, ${SECONDS_PER_RUN}s, fsync=$FSYNC"
tag=0
for variant in "${VARIANTS[@]}"; do
  tag=$((tag + 1))
  # A warm-up run creates the rows, so the measured one only updates them.
  pgbench -n -M prepared -c "$CLIENTS" -j 2 -T 1 -D tag=$tag \
    -f "$BENCH_DIR/${variant}_cycle.sql" >/dev/null 2>&1
  sql "CHECKPOINT; SELECT pg_stat_reset_shared('wal')" >/dev/null
  read -r user0 sys0 <<<"$(server_ticks)"
  done_flag="$WORK/done.$variant"
  sample_waits "$done_flag" >"$WORK/waits.$variant" &
  sampler=$!
  HELPERS+=("$sampler")
  perf_pid=
  if [ "${PROFILE_PERF:-0}" = 1 ]; then
    perf record -q -a -F 999 ${PROFILE_PERF_ARGS:-} -o "$WORK/perf.$variant" >/dev/null 2>&1 &
    perf_pid=$!
    HELPERS+=("$perf_pid")
  fi
  perf stat -a -e context-switches -x, -o "$WORK/switches.$variant" sleep "$SECONDS_PER_RUN" &
  counter=$!
  HELPERS+=("$counter")
  # In the background, so that a signal stops the run at once (see trap).
  pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -D tag=$tag \
    -f "$BENCH_DIR/${variant}_cycle.sql" >"$WORK/pgbench.out" 2>&1 &
  HELPERS+=($!)
  wait $!
  out=$(cat "$WORK/pgbench.out")
  touch "$done_flag"
  wait "$sampler" "$counter"
  sleep 0.5 # let the exited backends be reaped and their WAL stats flushed
  read -r user1 sys1 <<<"$(server_ticks)"
  cycles=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
  read -r syncs walbytes <<<"$(sql "SELECT wal_sync || ' ' || wal_bytes FROM pg_stat_wal" | tr '|' ' ')"
  printf '%-6s %8d cycles %6.0f/s  server CPU us/cycle %5.1f user %5.1f system  WAL flushes %5.3f/cycle  WAL %4.0f bytes/cycle  context switches %4.1f/cycle\n' \
    "$variant" "$cycles" "$(ratio "$cycles" "$SECONDS_PER_RUN")" \
    "$(ratio $(((user1 - user0) * 1000000 / TICK)) "$cycles")" \
    "$(ratio $(((sys1 - sys0) * 1000000 / TICK)) "$cycles")" \
    "$(ratio "$syncs" "$cycles")" "$(ratio "$walbytes" "$cycles")" \
    "$(ratio "$(awk -F, '/context-switches/ { print $1 }' "$WORK/switches.$variant")" "$cycles")"
  echo "  backends' wait events (share of samples):"
  sort "$WORK/waits.$variant" | uniq -c | sort -rn | head -n 8 |
    awk -v n="$(wc -l <"$WORK/waits.$variant")" '{ printf "    %5.1f%%  %s\n", 100 * $1 / n, $2 }'
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" && wait "$perf_pid" || true
    data="$BENCH_DIR/results/perf-$variant.data"
    mv "$WORK/perf.$variant" "$data"
    for sort in dso dso,symbol; do
      perf report -i "$data" --comm postgres --sort "$sort" --stdio 2>/dev/null | grep -v '^#' | grep -v '^$'
    done >"$BENCH_DIR/results/profile-$variant.txt"
    echo "  perf report: bench/results/profile-$variant.txt (data: perf-$variant.data)"
  fi
  HELPERS=()
done
