#!/usr/bin/env bash
# The lease shapes' cycles against the exclusive lease and the hand-written
# table, in one run (bench/run.sh with other variants): each client takes
# and releases its own name as a shared lease (shared_cycle.sql), one
# permit of a semaphore of 3 (semaphore_cycle.sql) and three leases at once
# with try_acquire_all, released in one statement (multi_cycle.sql).
#
#   bash bench/shapes.sh
#
# Writes bench/results/shapes.txt. BENCH_ROUNDS and BENCH_SECONDS as for
# run.sh.
set -euo pipefail
BENCH_VARIANTS="dlock table shared semaphore multi" \
  BENCH_CONFIGS="cycle:1 cycle:4 cycle:16" BENCH_REPORT=shapes \
  exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh"
