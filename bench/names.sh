#!/usr/bin/env bash
# Many names: what a lease cycle costs when its lease is one of a million
# rather than one of a thousand, and the space a lease takes, for dlock and
# the hand-written lease table, on one durable throwaway cluster.
#
#   bash bench/names.sh
#
# Environment: NAMES_ROUNDS (default 5), NAMES_SECONDS per run (default 5),
# NAMES_CLIENTS (default 4), NAMES_LARGE (default 1000000).
# Prints a table; writes the same to bench/results/names.txt.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS=${NAMES_ROUNDS:-5}
RUN_SECONDS=${NAMES_SECONDS:-5}
CLIENTS=${NAMES_CLIENTS:-4}
SMALL=1000
LARGE=${NAMES_LARGE:-1000000}
VARIANTS=(dlock table)

ensure_packages
build_and_install
start_bench_cluster
WORK=$(mktemp -d /tmp/dlock-names.XXXXXX)
trap 'stop_cluster; rm -rf "$WORK"' EXIT
psql -X -q -v ON_ERROR_STOP=1 -f "$BENCH_DIR/setup.sql"

# Every name gets its first grant and then its release, each in a
# transaction of its own as a service's would, so the runs measure cycles
# over rows that exist. A grant holds its lease's lock until commit: 5,000
# names at a time.
for names in $SMALL $LARGE; do
  log "creating $names leases of each variant"
  psql -X -q -v ON_ERROR_STOP=1 -c "CREATE TEMP TABLE granted (n text, token bigint)" -c "
       DO \$\$
       BEGIN
         FOR b IN 0 .. ($names - 1) / 5000 LOOP
           INSERT INTO granted
           SELECT n, (dlock.try_acquire(n, interval '30 seconds', 'client-0')).token
             FROM (SELECT 'names-$names-' || i AS n
                     FROM generate_series(b * 5000 + 1, least(b * 5000 + 5000, $names)) AS i) AS s;
           COMMIT;
           PERFORM dlock.release(n, token) FROM granted;
           TRUNCATE granted;
           COMMIT;
           INSERT INTO bench.lease (name, token, owner, expires_at)
           SELECT 'names-$names-' || i, nextval('bench.token_seq'), 'client-0',
                  clock_timestamp() + interval '30 seconds'
             FROM generate_series(b * 5000 + 1, least(b * 5000 + 5000, $names)) AS i;
           COMMIT;
           UPDATE bench.lease SET expires_at = '-infinity'
            WHERE name IN (SELECT 'names-$names-' || i
                             FROM generate_series(b * 5000 + 1, least(b * 5000 + 5000, $names)) AS i);
           COMMIT;
         END LOOP;
       END \$\$" >/dev/null
done
sql "VACUUM ANALYZE" >/dev/null
sql "CHECKPOINT" >/dev/null

# run VARIANT NAMES: cycles/s of one run
run() {
  local out
  out=$(pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$RUN_SECONDS" \
    -D names="$2" -D clients="$CLIENTS" -f "$BENCH_DIR/names_$1.sql" 2>&1) || {
    echo "$out" >&2
    printf 'bench: pgbench failed: %s, %s names\n' "$1" "$2" >&2
    exit 1
  }
  sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' <<<"$out"
}

log "warm-up: one run of each variant and size"
for variant in "${VARIANTS[@]}"; do
  for names in $SMALL $LARGE; do run "$variant" "$names" >/dev/null; done
done
sql "SELECT pg_stat_reset()" >/dev/null
: >"$WORK/runs"
for round in $(seq 1 "$ROUNDS"); do
  for variant in "${VARIANTS[@]}"; do
    for names in $SMALL $LARGE; do
      log "round $round/$ROUNDS: $variant, $names names"
      echo "$variant $names $round $(run "$variant" "$names")" >>"$WORK/runs"
    done
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
rate() { awk -v v="$1" -v n="$2" '$1 == v && $2 == n { print $4 }' "$WORK/runs" | median; }
# large/small in each round (the two ran seconds apart), median over rounds
cost_ratio() {
  awk -v v="$1" -v s="$SMALL" -v l="$LARGE" '
    $1 == v && $2 == s { small[$3] = $4 }
    $1 == v && $2 == l { large[$3] = $4 }
    END { for (r in small) print large[r] / small[r] }' "$WORK/runs" | median
}
bytes_per_name() { # RELATION SIZE_FUNCTION
  sql "SELECT round($2('$1')::numeric / $((SMALL + LARGE)), 1)"
}
hot_share() {
  sql "SELECT round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0), 2)
         FROM pg_stat_user_tables WHERE relid = '$1'::regclass"
}
REPORT="$WORK/report.txt"
{
  report_header "dlock many-names benchmark"
  echo "$CLIENTS clients, $ROUNDS rounds x ${RUN_SECONDS}s, interleaved; each client takes and"
  echo "releases random leases out of its own share of the names"
  echo
  printf '%-7s %14s %14s %12s %12s %12s %8s\n' variant "$SMALL names/s" "$LARGE names/s" \
    "large/small" "heap B/name" "total B/name" "HOT %"
  for variant in "${VARIANTS[@]}"; do
    if [ "$variant" = dlock ]; then rel=dlock.lease_store; else rel=bench.lease; fi
    printf '%-7s %14.0f %14.0f %12.2f %12s %12s %8s\n' "$variant" \
      "$(rate "$variant" $SMALL)" "$(rate "$variant" "$LARGE")" "$(cost_ratio "$variant")" \
      "$(bytes_per_name $rel pg_relation_size)" "$(bytes_per_name $rel pg_total_relation_size)" \
      "$(hot_share $rel)"
  done
  echo
  echo "large/small: cycles/s with $LARGE names over cycles/s with $SMALL, same round; median"
  echo "B/name: the relation's size (heap; with its index and TOAST) over the $((SMALL + LARGE)) names"
  echo "HOT %: heap-only share of the measured runs' updates"
} >"$REPORT"
mkdir -p "$BENCH_DIR/results"
cp "$REPORT" "$BENCH_DIR/results/names.txt"
cat "$REPORT"
