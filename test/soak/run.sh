#!/usr/bin/env bash
# The randomized fault soak: dlock_soak's clients and faults against a
# throwaway cluster, then dlock_history_check on the histories they logged.
#
#   test/soak/run.sh [--long] [--seconds N] [--ops N] [--clients N] [--seed N]
#                    [--keep]
#
# Short by default (60 s); --long runs until 1,000,000 calls. Expects dlock
# built and installed in $PG_BIN's PostgreSQL and the CMake build in
# DLOCK_BUILD (default build/).
# The histories are kept (their directory is printed) when a check fails,
# or always with --keep.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

seconds=60
ops=0
keep=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --long) seconds=0 ops=1000000 ;;
    --seconds) seconds=$2; shift ;;
    --ops) ops=$2; shift ;;
    --keep) keep=1 ;;
    --clients|--seed|--names|--restart-every) extra+=("$1" "$2"); shift ;;
    *) echo "usage: $0 [--long] [--seconds N] [--ops N] [--clients N]" \
         "[--seed N] [--keep]" >&2
       exit 2 ;;
  esac
  shift
done

build=${DLOCK_BUILD:-$DLOCK_ROOT/build}
soak=$build/dlock_soak
check=$build/dlock_history_check
[ -x "$soak" ] || { log "build dlock_soak first (cmake --build build)"; exit 1; }

start_cluster
psql -qX -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION dlock' >/dev/null
histories=$(mktemp -d "${TMPDIR:-/tmp}/dlock-soak.XXXXXX")
server_user=()
[ "$(id -u)" = 0 ] && server_user=(--server-user "$SERVER_USER")

log "soak: histories in $histories"
status=0
"$soak" --dir "$histories" --seconds "$seconds" --ops "$ops" \
  --pgdata "$CLUSTER_DIR/data" --pg-ctl "$PG_BIN/pg_ctl" \
  --server-log "$CLUSTER_DIR/server.log" "${server_user[@]}" "${extra[@]}" ||
  status=$?
if [ "$status" = 0 ]; then
  if [ -x "$check" ]; then
    "$check" "$histories" || status=$?
  else
    log "soak: no $check: the histories are not checked"
  fi
fi
if [ "$status" = 0 ] && [ "$keep" = 0 ]; then
  rm -rf "$histories"
elif [ "$status" = 0 ]; then
  log "soak: the histories are kept in $histories"
else
  log "soak: failed; the histories are kept in $histories"
fi
exit "$status"
