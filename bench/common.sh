# Shared by bench/run.sh and bench/handoff.sh: scripts/lib.sh, the durable
# cluster both measure on, and the report's first lines. Sourced, not run.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
BENCH_DIR="$DLOCK_ROOT/bench"

# Starts the throwaway cluster with durable commits, and checkpoints far
# enough apart that none lands inside a run. Extra arguments are more
# postgresql.conf lines.
start_bench_cluster() {
  start_cluster \
    "fsync = on" \
    "synchronous_commit = on" \
    "full_page_writes = on" \
    "shared_buffers = 256MB" \
    "max_wal_size = 4GB" \
    "checkpoint_timeout = 30min" \
    "$@"
}

sql() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }

# report_header TITLE: what was measured, on which server and commit.
report_header() {
  echo "$1, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "server: $(sql 'SHOW server_version'); $(nproc) CPUs;" \
    "fsync=$(sql 'SHOW fsync') synchronous_commit=$(sql 'SHOW synchronous_commit')" \
    "shared_buffers=$(sql 'SHOW shared_buffers')"
  echo "commit: $(git -C "$DLOCK_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    [ -n "$(git -C "$DLOCK_ROOT" status --porcelain 2>/dev/null)" ] && echo ' (with local changes)')"
}
