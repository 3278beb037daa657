#!/usr/bin/env bash
# dlock benchmark: lease cycles, contended attempts and waiting clients of
# dlock against a hand-written SQL lease table and session-level advisory
# locks, measured in one run on one durable throwaway cluster, variants
# interleaved round-robin.
#
#   bash bench/run.sh
#
# Environment: BENCH_ROUNDS (default 9), BENCH_SECONDS per run (default 3);
# BENCH_VARIANTS and BENCH_CONFIGS (workload:clients) to run others than
# the defaults below (bench/shapes.sh does), BENCH_REPORT the report's name.
# Prints a table and the targets; writes the same to
# bench/results/$BENCH_REPORT.txt (default latest.txt).
# Exits non-zero on any error (failed transactions, aborted clients, a lease
# never granted), never because a target is missed.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS=${BENCH_ROUNDS:-9}
RUN_SECONDS=${BENCH_SECONDS:-3}
WARMUP_SECONDS=1
# nostats: dlock's scripts with dlock.track_stats off (what statistics cost).
read -r -a VARIANTS <<<"${BENCH_VARIANTS:-dlock nostats table advisory}"
# workload:clients
read -r -a CONFIGS <<<"${BENCH_CONFIGS:-cycle:1 cycle:4 cycle:16 contended:16 waiting:16}"
REPORT_NAME=${BENCH_REPORT:-latest}

die() {
  printf 'bench: %s\n' "$*" >&2
  exit 1
}

ensure_packages
build_and_install

# pg_stat_statements counts how many attempts won (the release statement
# runs only after a grant); it costs every variant the same. dlock is
# preloaded, so dlock.stats counts (except in the nostats variant).
start_bench_cluster \
  "shared_preload_libraries = 'pg_stat_statements, dlock'" \
  "pg_stat_statements.track = top"

WORK=$(mktemp -d /tmp/dlock-bench.XXXXXX)
trap 'stop_cluster; rm -rf "$WORK"' EXIT

psql -X -q -v ON_ERROR_STOP=1 -f "$BENCH_DIR/setup.sql"

# Attempts and grants since the last reset, from pg_stat_statements: an
# attempt is a try_acquire / claim INSERT / try-lock, a grant is the release
# that only a won attempt runs.
count_statements() {
  sql "SELECT coalesce(sum(calls) FILTER (WHERE query ~ 'dlock\\.(try_)?acquire|INSERT INTO bench\\.lease|pg_(try_)?advisory_lock'), 0)
                || ' ' ||
              coalesce(sum(calls) FILTER (WHERE query ~ 'dlock\\.release|UPDATE bench\\.lease|pg_advisory_unlock'), 0)
         FROM pg_stat_statements
        WHERE query !~ 'pg_stat_statements'"
}

RUN_TAG=0

# run_pgbench VARIANT WORKLOAD CLIENTS SECONDS LOG_PREFIX
# Sets RESULT to "tps processed attempts grants"; dies on any failure. Each
# run names fresh leases (pgbench variable tag), so a lease left held by a
# transaction cut off at the end of a run cannot block a later one.
run_pgbench() {
  local variant=$1 workload=$2 clients=$3 secs=$4 prefix=$5
  local script="$BENCH_DIR/${variant}_${workload}.sql" options=""
  if [ "$variant" = nostats ]; then
    script="$BENCH_DIR/dlock_${workload}.sql" options="-c dlock.track_stats=off"
  fi
  # A table cannot wait for a row: its clients keep trying instead.
  [ "$variant.$workload" = table.waiting ] && script="$BENCH_DIR/table_contended.sql"
  local jobs=$((clients < 2 ? clients : 2))
  local out="$WORK/pgbench.out" rc=0
  RUN_TAG=$((RUN_TAG + 1))
  sql "SELECT pg_stat_statements_reset()" >/dev/null
  PGOPTIONS="$options" pgbench -n -M prepared -c "$clients" -j "$jobs" -T "$secs" \
    -D tag="$RUN_TAG" -f "$script" -l --log-prefix="$prefix" \
    >"$out" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    cat "$out" >&2
    die "pgbench failed (exit $rc): $variant $workload, $clients clients"
  fi
  local tps processed failed
  tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$out")
  processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out")
  if [ -z "$tps" ] || [ -z "$processed" ] || [ "$processed" = 0 ]; then
    cat "$out" >&2
    die "pgbench reported no transactions: $variant $workload, $clients clients"
  fi
  if [ -n "$failed" ] && [ "$failed" != 0 ]; then
    cat "$out" >&2
    die "$failed failed transactions: $variant $workload, $clients clients"
  fi
  local attempts grants
  read -r attempts grants <<<"$(count_statements)"
  if [ "$grants" = 0 ]; then
    die "no attempt was ever granted: $variant $workload, $clients clients"
  fi
  # Every attempt wins, unless its clients try one lease in a loop (a
  # client cut off at the end of a run may have attempted without releasing).
  if [ "$workload" != contended ] && [ "$script" != "$BENCH_DIR/table_contended.sql" ] &&
    [ $((attempts - grants)) -gt "$clients" ]; then
    die "$workload: attempts missed grants ($attempts attempts, $grants grants): $variant, $clients clients"
  fi
  RESULT="$tps $processed $attempts $grants"
}

log "warm-up: ${WARMUP_SECONDS}s per variant and configuration"
for config in "${CONFIGS[@]}"; do
  for variant in "${VARIANTS[@]}"; do
    run_pgbench "$variant" "${config%%:*}" "${config##*:}" "$WARMUP_SECONDS" \
      "$WORK/warmup"
  done
done
rm -f "$WORK"/warmup.*
sql "CHECKPOINT" >/dev/null

# Per-run results: variant workload clients round tps processed attempts grants
RUNS="$WORK/runs.txt"
: >"$RUNS"
mkdir -p "$WORK/logs"
started=$(date +%s)
for round in $(seq 1 "$ROUNDS"); do
  for config in "${CONFIGS[@]}"; do
    workload=${config%%:*} clients=${config##*:}
    # Rotate the variant order each round so that none always runs first.
    n=${#VARIANTS[@]}
    for i in $(seq 0 $((n - 1))); do
      variant=${VARIANTS[$(((i + round - 1) % n))]}
      log "round $round/$ROUNDS: $variant $workload, $clients clients"
      run_pgbench "$variant" "$workload" "$clients" "$RUN_SECONDS" \
        "$WORK/logs/$variant.$workload.$clients.r$round"
      echo "$variant $workload $clients $round $RESULT" >>"$RUNS"
    done
  done
done
elapsed=$(($(date +%s) - started))

# Median of the rounds' rates, and latency percentiles (nearest rank) over
# every logged transaction of every round; pgbench's log has the latency in
# microseconds in its third column. Sets SUMMARY[variant.workload:clients]
# to "rate min max grants_per_s p50_ms p99_ms ratio grant_ratio", where
# ratio is the median over the rounds of rate / the table's rate in the
# same round (the two ran seconds apart, so the ratio is steadier than the
# rates when the machine's disk or CPU speed drifts), and grant_ratio the
# same for grants/s.
declare -A SUMMARY
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
percentile() {
  awk -v p="$1" '{ v[NR] = $1 }
    END { i = int(NR * p); if (i < NR * p) i++; if (i < 1) i = 1; print v[i] / 1000 }' "$2"
}
# The per-run lines of one variant, workload and client count.
runs_of() {
  awk -v v="$1" -v w="$2" -v c="$3" '$1 == v && $2 == w && $3 == c' "$RUNS"
}
for config in "${CONFIGS[@]}"; do
  workload=${config%%:*} clients=${config##*:}
  for variant in "${VARIANTS[@]}"; do
    rates=$(runs_of "$variant" "$workload" "$clients" | awk '{ print $5 }' | sort -g)
    grant_rates=$(runs_of "$variant" "$workload" "$clients" |
      awk '{ printf "%.3f\n", $5 * $8 / $6 }')
    # per round: "rate_ratio grant_ratio"
    ratios=$(for round in $(seq 1 "$ROUNDS"); do
      awk -v v="$variant" -v w="$workload" -v c="$clients" -v r="$round" '
        $2 == w && $3 == c && $4 == r && $1 == v { a = $5; ag = $5 * $8 / $6 }
        $2 == w && $3 == c && $4 == r && $1 == "table" { b = $5; bg = $5 * $8 / $6 }
        END { printf "%.4f %.4f\n", a / b, ag / bg }' "$RUNS"
    done)
    lat="$WORK/latency.txt"
    cat "$WORK/logs/$variant.$workload.$clients".r*.* | awk '{ print $3 }' |
      sort -n >"$lat"
    SUMMARY[$variant.$config]="$(median <<<"$rates") $(head -n 1 <<<"$rates") \
$(tail -n 1 <<<"$rates") $(median <<<"$grant_rates") \
$(percentile 0.50 "$lat") $(percentile 0.99 "$lat") $(cut -d' ' -f1 <<<"$ratios" | median) \
$(cut -d' ' -f2 <<<"$ratios" | median)"
  done
done

REPORT="$WORK/report.txt"
{
  report_header "dlock benchmark"
  echo "$ROUNDS rounds x ${RUN_SECONDS}s per variant and configuration, interleaved;" \
    "measured part took ${elapsed}s"
  echo
  echo "cycle     = acquire + release of the client's own lease (uncontended), rate in cycles/s"
  echo "contended = all clients try one lease; one attempt per transaction, a winner releases at once;"
  echo "            rate in attempts/s, grants/s = attempts that won"
  echo "waiting   = all clients wait for one lease (dlock.acquire, pg_advisory_lock) and release it at"
  echo "            once; the table cannot wait, so its clients keep trying as in contended"
  echo "nostats   = dlock with dlock.track_stats = off (dlock counts its statistics in shared memory)"
  echo "rate: median of the rounds (min..max); latency per pgbench transaction over all rounds;"
  echo "x table: rate / the hand-written table's rate at the same workload and clients, in the"
  echo "         same round (they ran seconds apart); median over the rounds; grants x table: the"
  echo "         same for grants/s"
  echo
  printf '%-9s %-10s %7s %11s %21s %10s %8s %8s %8s %9s\n' \
    variant workload clients rate/s "(min..max)" grants/s "p50 ms" "p99 ms" "x table" "grants x"
  for config in "${CONFIGS[@]}"; do
    workload=${config%%:*} clients=${config##*:}
    for variant in "${VARIANTS[@]}"; do
      read -r median min max grants p50 p99 ratio grant_ratio <<<"${SUMMARY[$variant.$config]}"
      ratio=$(printf '%.2fx' "$ratio") grant_ratio=$(printf '%.2fx' "$grant_ratio")
      if [ "$workload" = cycle ]; then grants=- grant_ratio=-; else grants=$(printf '%.0f' "$grants"); fi
      printf '%-9s %-10s %7s %11.0f %21s %10s %8.3f %8.3f %8s %9s\n' \
        "$variant" "$workload" "$clients" "$median" \
        "($(printf '%.0f..%.0f' "$min" "$max"))" "$grants" "$p50" "$p99" "$ratio" "$grant_ratio"
    done
  done
  echo
  echo "targets (dlock against the hand-written table, durable commits)"
  target() { # LABEL CONFIG WANT [FIELD: 7 rate ratio (default), 8 grants ratio]
    local label=$1 config=$2 want=$3 field=${4:-7} got
    [ -n "${SUMMARY[dlock.$config]:-}" ] || return 0  # not run this time
    got=$(cut -d' ' -f"$field" <<<"${SUMMARY[dlock.$config]}")
    got=$(printf '%.2f' "$got")
    if awk -v g="$got" -v w="$want" 'BEGIN { exit !(g >= w) }'; then
      printf '  %-44s >= %4.1fx   got %6.2fx   MET\n' "$label" "$want" "$got"
    else
      printf '  %-44s >= %4.1fx   got %6.2fx   MISSED\n' "$label" "$want" "$got"
    fi
  }
  target "uncontended cycles/s, 1 client" cycle:1 1.6
  target "uncontended cycles/s, 4 clients" cycle:4 2.5
  target "uncontended cycles/s, 16 clients" cycle:16 2.5
  target "contended attempts/s, 16 clients, one lease" contended:16 10
  target "contended grants/s, 16 clients, one lease" contended:16 3 8
  target "waiting grants/s, 16 clients, one lease" waiting:16 6.6 8
  echo
  echo "per run: variant workload clients round tps transactions attempts grants"
  sed 's/^/  /' "$RUNS"
} >"$REPORT"

mkdir -p "$BENCH_DIR/results"
cp "$REPORT" "$BENCH_DIR/results/$REPORT_NAME.txt"
cat "$REPORT"
