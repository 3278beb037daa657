#!/usr/bin/env bash
# The dlock demo, end to end on a fresh Debian 12 (as root or a sudo user):
# installs what is missing, builds and installs the extension, starts a
# throwaway PostgreSQL 15 cluster on a private unix socket, and runs six
# worker processes racing for one lease, writing a report row through
# fenced writes, while one holder is killed and another paused past its ttl.
# The cluster is stopped and removed when this script exits.
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
