#!/usr/bin/env bash
# The dlock demo, end to end on a fresh Debian 12 (as root or a sudo user):
# installs what is missing, builds and installs the extension, starts a
# throwaway PostgreSQL 15 cluster on a private unix socket, and runs six
# worker processes racing for one lease, writing a report row through
# fenced writes, while one holder is killed and another paused past its ttl.
# Then the dlock command, as cron and an operator meet it: a second run of
# a job finds the lease busy, and a run whose lease is force-released has
# its command stopped. Last, what dlock.stats counted for each lease. The
# cluster is stopped and removed when this script exits.
#
#   bash scripts/demo.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_packages
build_and_install
start_cluster

log "creating the extension"
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION dlock'

build_client

log "running the demo (about 17 seconds)"
"$DLOCK_ROOT/build/dlock_demo"

# --- the dlock command (installed in /usr/local/bin by build_client) ---

lease_state() {
  psql -XAtq -v ON_ERROR_STOP=1 \
    -c "SELECT state FROM dlock.leases WHERE name = '$1'"
}

# Waits until lease $1 is held, for ten seconds at most.
wait_until_held() {
  local deadline=$((SECONDS + 10))
  until [ "$(lease_state "$1")" = held ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "lease $1 was not taken within 10 seconds"
      return 1
    fi
    sleep 0.05
  done
}

# A job for sh -c: says it holds the lease, then works until the file $1
# exists (five seconds at most).
job='echo "  job: $DLOCK_NAME held with token $DLOCK_TOKEN by $DLOCK_OWNER"
i=0
while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
echo "  job: done"'

flags=$(mktemp -d)
trap 'rm -rf "$flags"; stop_cluster' EXIT

log "dlock run: two cron runs of one job; the second starts while the first holds the lease"
log "the first run: dlock run --ttl 10s hourly-sync -- sh -c JOB"
dlock run --ttl 10s hourly-sync -- sh -c "$job" job "$flags/finish" &
first=$!
wait_until_held hourly-sync
log "the second run: dlock run --ttl 10s hourly-sync -- sh -c 'echo never printed'"
status=0
dlock run --ttl 10s hourly-sync -- sh -c 'echo never printed' || status=$?
log "the second run exited $status (busy) at once; its command never started"
touch "$flags/finish"
status=0
wait "$first" || status=$?
log "the first run's job ended: dlock exited $status and released the lease ($(lease_state hourly-sync))"

log "dlock run: an operator force-releases a running job's lease from psql"
log "dlock run --ttl 10s hourly-sync -- sh -c JOB"
dlock run --ttl 10s hourly-sync -- sh -c "$job" job "$flags/never" &
forced=$!
wait_until_held hourly-sync
force="SELECT name, token, owner FROM dlock.force_release('hourly-sync', 'bad input, rerun tomorrow')"
log "psql: $force"
psql -X -q -v ON_ERROR_STOP=1 -c "$force"
status=0
wait "$forced" || status=$?
log "dlock ended the job (SIGTERM to its process group) and exited $status: the lease was lost"

# --- what an operator graphs: dlock.stats (dlock is preloaded) ---
stats="SELECT name, grants, busy, waits, takeovers, force_releases, releases,
       round(max_hold_time) AS max_hold_ms, holders FROM dlock.stats ORDER BY name"
log "psql: what dlock counted for each lease (dlock.stats)"
psql -X -q -v ON_ERROR_STOP=1 -c "$stats"
