#!/usr/bin/env bash
# dlock hand-off benchmark: how fast a lease passes to a client blocked in
# dlock.acquire, after a release and at expiry, and how blocking clients
# share one lease, against PostgreSQL's blocking session-level advisory
# locks, measured in one run on one durable throwaway cluster, interleaved.
#
#   bash bench/handoff.sh
#
# Environment: BENCH_ROUNDS (default 5); BENCH_SECONDS, each contended
# throughput run (default 15); HANDOFF_SECONDS, each hand-off run (default
# 2); HANDOFF_EXPIRIES, hand-offs at expiry over all rounds (default 50).
# Prints the report and writes it to bench/results/handoff-latest.txt.
# Exits non-zero on any error, never because a figure is bad.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
BUILD_DIR="$DLOCK_ROOT/build/handoff-bench"

ROUNDS=${BENCH_ROUNDS:-5}
THROUGHPUT_SECONDS=${BENCH_SECONDS:-15}
HANDOFF_SECONDS=${HANDOFF_SECONDS:-2}
EXPIRIES=${HANDOFF_EXPIRIES:-50}

ensure_packages
build_and_install
log "building dlock_handoff_bench"
cmake -S "$DLOCK_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" --target dlock_handoff_bench -j2 >/dev/null

# Durable commits, as in bench/run.sh: a dlock grant waits for its WAL
# flush, and that is part of every hand-off.
start_bench_cluster

WORK=$(mktemp -d /tmp/dlock-handoff.XXXXXX)
trap 'stop_cluster; rm -rf "$WORK"' EXIT

sql "CREATE EXTENSION dlock" >/dev/null

started=$(date +%s)
"$BUILD_DIR/dlock_handoff_bench" --rounds="$ROUNDS" \
  --handoff-seconds="$HANDOFF_SECONDS" \
  --throughput-seconds="$THROUGHPUT_SECONDS" \
  --expiries="$EXPIRIES" >"$WORK/figures.txt"
elapsed=$(($(date +%s) - started))

REPORT="$WORK/report.txt"
{
  report_header "dlock hand-off benchmark"
  echo "$ROUNDS rounds, dlock and advisory interleaved; measured part took ${elapsed}s"
  echo
  cat "$WORK/figures.txt"
} >"$REPORT"

mkdir -p "$BENCH_DIR/results"
cp "$REPORT" "$BENCH_DIR/results/handoff-latest.txt"
cat "$REPORT"
