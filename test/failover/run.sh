#!/usr/bin/env bash
# dlock through failovers of a real HA stack: one etcd, three PostgreSQL 15
# nodes under Patroni in synchronous mode, clients cycling leases and
# fenced writes (dlock_failover_clients) while faults take turns:
#   kill9       kill -9 of the primary's Patroni and postmaster, then its
#               Patroni started again once another node is promoted
#   switchover  patronictl switchover --force
#   freeze      the primary's Patroni and postgres processes stopped with
#               SIGSTOP until another node is promoted, then SIGCONT
#   etcd        etcd stopped until the primary steps down, then started
# After each fault it waits for a read-write primary, a synchronous
# standby and the clients' progress. Then the clients stop and the
# history checker (dlock_history_check) judges what they logged.
#
#   test/failover/run.sh [--long] [--failovers N] [--keep]
#
# Short mode (the default): 4 faults, one of each kind, at least 2 of them
# failovers to another node; --long: 16 faults, at least 10 failovers;
# --failovers N: N faults, at least N/2 failovers. (An etcd outage usually
# ends with the same node primary again.)
# --keep leaves the state directory (logs, history) for inspection.
# Needs: PG_BIN (a PostgreSQL 15 bin directory with dlock installed,
# default /usr/lib/postgresql/15/bin), patroni, etcd, and the CMake build
# in DLOCK_BUILD (default build/) with dlock_failover_clients (and
# dlock_history_check, which judges the history when it is there).
# Everything listens on 127.0.0.1: PostgreSQL on 25441-25443, Patroni's
# REST API on 28008-28010, etcd on 22379 (clients) and 22380 (peers). As
# root, etcd, Patroni and PostgreSQL run as the "postgres" user.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
BUILD=${DLOCK_BUILD:-$ROOT/build}
FAULTS=(kill9 switchover freeze etcd)
FAILOVERS=${#FAULTS[@]}
MIN_MOVES=2  # faults after which another node must be primary
KEEP=0
while [ $# -gt 0 ]; do
  case $1 in
  --long) FAILOVERS=16 MIN_MOVES=10 ;;
  --failovers) FAILOVERS=$2 MIN_MOVES=$(($2 / 2)); shift ;;
  --keep) KEEP=1 ;;
  *) echo "usage: $0 [--long] [--failovers N] [--keep]" >&2; exit 2 ;;
  esac
  shift
done

NODES=(1 2 3)
PG_PORTS=(0 25441 25442 25443)
REST_PORTS=(0 28008 28009 28010)
ETCD_CLIENT=127.0.0.1:22379
ETCD_PEER=127.0.0.1:22380
SCOPE=dlock-failover
NAMES=3
CLIENTS=4
CONNINFO="host=127.0.0.1,127.0.0.1,127.0.0.1 port=25441,25442,25443"
CONNINFO+=" user=postgres dbname=postgres target_session_attrs=read-write"
CONNINFO+=" connect_timeout=2"

log() { printf '==> %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

for tool in patroni patronictl etcd curl python3; do
  command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done
[ -x "$PG_BIN/postgres" ] || { echo "$0: no postgres in $PG_BIN" >&2; exit 2; }
[ -f "$("$PG_BIN/pg_config" --sharedir)/extension/dlock.control" ] ||
  { echo "$0: dlock is not installed in $PG_BIN's PostgreSQL" >&2; exit 2; }
[ -x "$BUILD/dlock_failover_clients" ] ||
  { echo "$0: build dlock_failover_clients first (cmake)" >&2; exit 2; }

# The server processes run as the "postgres" user when we are root.
# setpriv execs in place and a simple command started with & is forked
# and executed directly, so $! is the server process itself.
if [ "$(id -u)" = 0 ]; then
  AS_SERVER_USER=(setpriv --reuid=postgres --regid=postgres --init-groups)
  SERVER_USER=postgres
else
  AS_SERVER_USER=()
  SERVER_USER=$(id -un)
fi

DIR=$(mktemp -d -t dlock-failover.XXXXXX)  # in TMPDIR
chmod 755 "$DIR"
mkdir "$DIR/history"
[ "$(id -u)" = 0 ] && chown "$SERVER_USER": "$DIR"
ETCD_PID=
CLIENTS_PID=
declare -A PATRONI_PID=()

# SIGCONT first: a frozen process cannot act on SIGTERM.
signal_tree() {  # signal pid: the process and its children
  local sig=$1 pid=$2 child
  for child in $(pgrep -P "$pid" 2>/dev/null || true); do
    signal_tree "$sig" "$child"
  done
  kill "-$sig" "$pid" 2>/dev/null || true
}

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

wait_gone() {  # seconds pid...: true once every pid has exited
  local until=$((SECONDS + $1)) pid
  shift
  for pid in "$@"; do
    while alive "$pid"; do
      [ $SECONDS -ge $until ] && return 1
      sleep 0.2
    done
  done
}

postmaster_pid() {  # node
  head -1 "$DIR/node$1/data/postmaster.pid" 2>/dev/null || true
}

cleanup() {
  local status=$? n pids=()
  trap - EXIT INT TERM
  if alive "$CLIENTS_PID"; then
    kill -TERM "$CLIENTS_PID" 2>/dev/null || true
    wait_gone 10 "$CLIENTS_PID" || kill -KILL "$CLIENTS_PID" 2>/dev/null || true
  fi
  for n in "${NODES[@]}"; do
    local pm
    pm=$(postmaster_pid "$n")
    [ -n "$pm" ] && signal_tree CONT "$pm"
    if alive "${PATRONI_PID[$n]:-}"; then
      signal_tree CONT "${PATRONI_PID[$n]}"
      kill -TERM "${PATRONI_PID[$n]}" 2>/dev/null || true
      pids+=("${PATRONI_PID[$n]}")
    fi
  done
  [ ${#pids[@]} -gt 0 ] && { wait_gone 30 "${pids[@]}" || true; }
  for n in "${NODES[@]}"; do
    alive "${PATRONI_PID[$n]:-}" && kill -KILL "${PATRONI_PID[$n]}" 2>/dev/null
    pm=$(postmaster_pid "$n")
    if alive "$pm"; then
      "${AS_SERVER_USER[@]}" "$PG_BIN/pg_ctl" -D "$DIR/node$n/data" -m immediate \
        -w stop >/dev/null 2>&1 || kill -KILL "$pm" 2>/dev/null || true
    fi
  done
  if alive "$ETCD_PID"; then
    kill -TERM "$ETCD_PID" 2>/dev/null || true
    wait_gone 10 "$ETCD_PID" || kill -KILL "$ETCD_PID" 2>/dev/null || true
  fi
  if [ "$KEEP" = 1 ]; then
    log "state kept in $DIR"
  else
    rm -rf "$DIR"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The end of every node's logs, for a failure.
show_logs() {
  local n
  for n in "${NODES[@]}"; do
    echo "--- node$n: patroni" >&2
    tail -n 15 "$DIR/node$n/patroni.log" >&2 2>/dev/null || true
    echo "--- node$n: postgres" >&2
    tail -n 5 "$DIR/node$n"/data/log/*.log >&2 2>/dev/null || true
  done
}

fail() {
  echo "FAILED: $*" >&2
  show_logs
  exit 1
}

start_etcd() {
  "${AS_SERVER_USER[@]}" etcd --name "$SCOPE" --data-dir "$DIR/etcd" \
    --listen-client-urls "http://$ETCD_CLIENT" \
    --advertise-client-urls "http://$ETCD_CLIENT" \
    --listen-peer-urls "http://$ETCD_PEER" \
    --initial-advertise-peer-urls "http://$ETCD_PEER" \
    --initial-cluster "$SCOPE=http://$ETCD_PEER" --enable-v2=true \
    --logger zap --log-level warn >>"$DIR/etcd.log" 2>&1 &
  ETCD_PID=$!
  local until=$((SECONDS + 30))
  until curl -sf "http://$ETCD_CLIENT/health" >/dev/null; do
    [ $SECONDS -ge $until ] && fail "etcd did not start"
    alive "$ETCD_PID" || fail "etcd exited: $(tail -n 5 "$DIR/etcd.log")"
    sleep 0.2
  done
}

# Patroni talks to etcd through its v2 API ("etcd:", hence --enable-v2):
# Patroni 3.0.2's etcd3 client, once its lease has expired, takes a new
# one and writes the leader key without comparing it, so a primary frozen
# past its ttl takes the key back from the node promoted meanwhile, which
# demotes itself and is rewound, losing what it committed.
write_patroni_config() {  # node
  local n=$1
  mkdir -p "$DIR/node$n"
  cat >"$DIR/node$n/patroni.yml" <<EOF
scope: $SCOPE
namespace: /dlock/
name: node$n
log:
  level: INFO
  dir: $DIR/node$n
  file_num: 1
restapi:
  listen: 127.0.0.1:${REST_PORTS[$n]}
  connect_address: 127.0.0.1:${REST_PORTS[$n]}
etcd:
  hosts: $ETCD_CLIENT
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 40
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
        logging_collector: 'on'
        log_min_messages: warning
  initdb:
  - encoding: UTF8
  - locale: C.UTF-8
  - data-checksums
postgresql:
  listen: 127.0.0.1:${PG_PORTS[$n]}
  connect_address: 127.0.0.1:${PG_PORTS[$n]}
  data_dir: $DIR/node$n/data
  bin_dir: $PG_BIN
  pgpass: $DIR/node$n/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: replicator
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '$DIR/node$n'
  pg_hba:
  - local all all trust
  - host all all 127.0.0.1/32 trust
  - host replication all 127.0.0.1/32 trust
EOF
  [ "$(id -u)" = 0 ] && chown -R "$SERVER_USER": "$DIR/node$n"
  return 0
}

start_patroni() {  # node
  local n=$1
  "${AS_SERVER_USER[@]}" patroni "$DIR/node$n/patroni.yml" \
    >>"$DIR/node$n/patroni.out" 2>&1 &
  PATRONI_PID[$n]=$!
}

# The cluster as a live node's Patroni sees it: one line per member,
# "name role state timeline lag" (role: leader, sync_standby, replica;
# lag in bytes behind the leader, "-" for the leader, "unknown").
members() {
  local n
  for n in "${NODES[@]}"; do
    curl -sf --max-time 2 "http://127.0.0.1:${REST_PORTS[$n]}/cluster" 2>/dev/null |
      python3 -c '
import json, sys
for m in json.load(sys.stdin).get("members", []):
    print(m["name"], m["role"], m.get("state", "?"), m.get("timeline", "?"),
          m.get("lag", "-"))' 2>/dev/null && return 0
  done
  return 1
}

# The node number of the running leader, "" if none.
leader() {
  members | awk '$2 == "leader" && $3 == "running" { sub("node", "", $1); print $1 }'
}

psql_node() {  # node sql...
  local n=$1
  shift
  "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 \
    "host=127.0.0.1 port=${PG_PORTS[$n]} user=postgres dbname=postgres connect_timeout=2" "$@"
}

# Waits for a read-write primary that Patroni names leader; prints it.
wait_primary() {  # seconds [not-node]
  local until=$((SECONDS + $1)) not=${2:-} n
  while [ $SECONDS -lt $until ]; do
    n=$(leader || true)
    if [ -n "$n" ] && [ "$n" != "$not" ] &&
      [ "$(psql_node "$n" -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; then
      echo "$n"
      return 0
    fi
    sleep 0.2
  done
  return 1
}

# Waits for all three members running on the leader's timeline, less than
# a WAL segment behind it, one of them the synchronous standby: a fault
# must not land on a node still rejoining (a rewind cut short by the next
# fault can leave a standby waiting for WAL that never comes).
wait_healthy() {  # seconds
  local until=$((SECONDS + $1)) m
  while [ $SECONDS -lt $until ]; do
    m=$(members || true)
    if awk '
        $2 == "leader" && $3 == "running" { leaders++; tl = $4 }
        $2 == "sync_standby" { syncs++ }
        { n++; state[n] = $3; line_tl[n] = $4; lag[n] = $5 }
        END {
          if (n != 3 || leaders != 1 || syncs != 1) exit 1
          for (i = 1; i <= n; i++) {
            if (state[i] != "running" && state[i] != "streaming") exit 1
            if (line_tl[i] != tl) exit 1
            if (lag[i] != "-" && (lag[i] == "unknown" || lag[i] + 0 >= 16777216)) exit 1
          }
        }' <<<"$m"; then
      return 0
    fi
    sleep 0.5
  done
  echo "members: $m" >&2
  return 1
}

# Acknowledged calls so far, every client together.
progress() {
  cat "$DIR"/history/client-*.jsonl 2>/dev/null | grep -c '"outcome":"ok"' || true
}

# Waits until the clients have had 20 more calls acknowledged.
wait_progress() {  # seconds
  local until=$((SECONDS + $1)) from
  from=$(progress)
  while [ $SECONDS -lt $until ]; do
    [ "$(progress)" -ge $((from + 20)) ] && return 0
    alive "$CLIENTS_PID" || fail "the clients exited"
    sleep 0.2
  done
  return 1
}

# The faults. Each breaks the primary (node $1) and returns once the fault
# is over; the caller then waits for a primary.
fault_kill9() {
  local n=$1 pm promoted
  pm=$(postmaster_pid "$n")
  [ -n "$pm" ] || fail "node$n has no postmaster.pid"
  # The whole node at once: a postmaster killed alone is restarted in
  # place by its Patroni, which is no failover.
  kill -KILL "${PATRONI_PID[$n]}" "$pm"
  wait "${PATRONI_PID[$n]}" 2>/dev/null || true
  promoted=$(wait_primary 90 "$n") || fail "no node promoted after node$n was killed"
  log "node$promoted promoted after node$n was killed"
  # Back as a standby of the new primary (rewound if it must be).
  start_patroni "$n"
}

fault_switchover() {
  patronictl -c "$DIR/node1/patroni.yml" switchover --force "$SCOPE" \
    >>"$DIR/patronictl.log" 2>&1 || fail "patronictl switchover: $(tail -n 5 "$DIR/patronictl.log")"
}

fault_freeze() {
  local n=$1 pm pids promoted
  pm=$(postmaster_pid "$n")
  [ -n "$pm" ] || fail "node$n has no postmaster.pid"
  # Patroni first, so it cannot notice and restart anything; the
  # postmaster before its children, so it forks no new ones.
  signal_tree STOP "${PATRONI_PID[$n]}"
  kill -STOP "$pm"
  mapfile -t pids < <(pgrep -P "$pm" || true)
  [ ${#pids[@]} -gt 0 ] && kill -STOP "${pids[@]}"
  promoted=$(wait_primary 90 "$n") || {
    kill -CONT "$pm" "${pids[@]}"
    fail "no node promoted while node$n was frozen"
  }
  log "node$promoted promoted while node$n is frozen"
  # Postgres wakes first: for a moment it still runs as a primary, with
  # the clients' connections, before its Patroni sees that it lost the
  # leader key and demotes it.
  kill -CONT "$pm" "${pids[@]}" 2>/dev/null || true
  sleep 2
  signal_tree CONT "${PATRONI_PID[$n]}"
}

fault_etcd() {
  local n=$1 until
  kill -TERM "$ETCD_PID"
  wait_gone 20 "$ETCD_PID" || fail "etcd did not stop"
  # Without its DCS the primary steps down after retry_timeout.
  until=$((SECONDS + 60))
  while [ "$(psql_node "$n" -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; do
    [ $SECONDS -ge $until ] && fail "node$n stayed primary without etcd"
    sleep 0.2
  done
  log "node$n stepped down without etcd"
  start_etcd
}

# --- the cluster
log "state in $DIR"
start_etcd
for n in "${NODES[@]}"; do write_patroni_config "$n"; done
start_patroni 1
first=$(wait_primary 120) || fail "node1 did not bootstrap the cluster"
start_patroni 2
start_patroni 3
wait_healthy 180 || fail "the standbys did not join"
log "cluster up: node$first primary"

psql_node "$first" <<SQL >/dev/null || fail "creating dlock"
CREATE EXTENSION dlock;
CREATE TABLE failover_rows(name text PRIMARY KEY, value text, fence_token bigint);
INSERT INTO failover_rows
  SELECT 'failover-' || i, 'initial-' || i, NULL FROM generate_series(1, $NAMES) AS i;
SQL

# --- the clients
"$BUILD/dlock_failover_clients" --conninfo "$CONNINFO" --dir "$DIR/history" \
  --clients "$CLIENTS" --names "$NAMES" --ttl-ms 5000 \
  --stop-file "$DIR/stop" >"$DIR/clients.log" 2>&1 &
CLIENTS_PID=$!
wait_progress 60 || fail "the clients made no progress: $(cat "$DIR/clients.log")"

# --- the faults
declare -A FAULTS_DONE=()
MOVED=0  # faults after which another node was primary
START=$(now)
for ((i = 0; i < FAILOVERS; i++)); do
  kind=${FAULTS[$((i % ${#FAULTS[@]}))]}
  old=$(leader)
  [ -n "$old" ] || fail "no leader before fault $((i + 1))"
  t0=$(now)
  log "fault $((i + 1))/$FAILOVERS: $kind on node$old"
  "fault_$kind" "$old"
  new=$(wait_primary 120) || fail "no primary after $kind"
  t_primary=$(since "$t0")
  wait_progress 120 || fail "the clients made no progress after $kind"
  t_progress=$(since "$t0")
  wait_healthy 180 || fail "the cluster did not heal after $kind"
  log "$kind: node$old -> node$new; primary after ${t_primary}s, clients on after ${t_progress}s, healed after $(since "$t0")s"
  FAULTS_DONE[$kind]=$((${FAULTS_DONE[$kind]:-0} + 1))
  [ "$new" != "$old" ] && MOVED=$((MOVED + 1))
done
FAULT_TIME=$(since "$START")

# --- the verdict
touch "$DIR/stop"
wait_gone 180 "$CLIENTS_PID" || fail "the clients did not stop"
set +e
wait "$CLIENTS_PID"
clients_status=$?
set -e
CLIENTS_PID=
[ "$clients_status" = 0 ] || fail "the clients failed ($clients_status): $(cat "$DIR/clients.log")"

summary="faults:"
for kind in "${FAULTS[@]}"; do summary+=" $kind ${FAULTS_DONE[$kind]:-0}"; done
log "$summary, in ${FAULT_TIME}s; the primary moved $MOVED times"
[ "$MOVED" -ge "$MIN_MOVES" ] || fail "the primary moved $MOVED times, fewer than $MIN_MOVES"
count() { cat "$DIR"/history/client-*.jsonl | grep -c "$1" || true; }
calls=$(count '"type":"invoke"')
line="calls $calls:"
for outcome in ok busy refused failed; do
  line+=" $outcome $(count "\"outcome\":\"$outcome\"")"
done
log "$line unknown $((calls - $(count '"type":"complete"')))"
if [ -x "$BUILD/dlock_history_check" ]; then
  "$BUILD/dlock_history_check" "$DIR/history" || fail "the history checker found violations"
else
  log "no dlock_history_check in $BUILD: the history was not judged"
fi
log "passed"
