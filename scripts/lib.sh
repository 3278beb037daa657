# Shared set-up for scripts/demo.sh, scripts/test.sh and bench/run.sh:
# packages, build, install, and a throwaway PostgreSQL cluster that
# listens on a private unix socket only. Sourced, not run.
set -euo pipefail

DLOCK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# PG_BIN may point at another PostgreSQL 15 installation (its bin directory),
# or at one of another major that scripts/build-postgres.sh built.
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
export PATH="$PG_BIN:$PATH"

# initdb and pg_ctl refuse to run as root: as root the server runs as the
# "postgres" user that Debian's packages create; otherwise as yourself.
if [ "$(id -u)" = 0 ]; then
  as_root() { "$@"; }
  as_server_user() { runuser -u postgres -- "$@"; }
  SERVER_USER=postgres
else
  as_root() { sudo "$@"; }
  as_server_user() { "$@"; }
  SERVER_USER=$(id -un)
fi

log() { printf '==> %s\n' "$*" >&2; }

# What building dlock, its unit tests and its manual page, the static checks
# (clang-format, python3), and running the pg_regress and isolation suites
# take: all that scripts/test.sh --quick needs. ensure_packages adds what
# the other suites and the demo use.
BUILD_PACKAGES="postgresql-15 postgresql-client-15 postgresql-server-dev-15
  libpq-dev libkrb5-dev g++ make cmake libgtest-dev nlohmann-json3-dev pandoc
  clang-format python3"

# Prints those of the packages named that are not installed.
missing_packages() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
      missing+=("$p")
  done
  echo "${missing[*]}"
}

# Installs the packages named, as root or with sudo.
install_packages() {
  log "installing: $*"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Installs whatever of the build and test dependencies, and of the
# packages named as arguments, is missing.
ensure_packages() {
  local missing
  missing=$(missing_packages $BUILD_PACKAGES libipc-run-perl pgbouncer \
    faketime libfaketime man-db $*)
  [ -z "$missing" ] || install_packages $missing
}

# Builds and installs dlock; extra arguments go to make (DLOCK_TESTING=1).
# --incremental first keeps what an earlier build made (the Makefile
# rebuilds it all when a build switch changes). An installation you may
# write to (a private copy) is written as yourself, any other as root.
build_and_install() {
  local pg_config="PG_CONFIG=$PG_BIN/pg_config"
  if [ "${1:-}" = --incremental ]; then
    shift
  else
    make -C "$DLOCK_ROOT" -s "$pg_config" clean
  fi
  log "building dlock $*"
  make -C "$DLOCK_ROOT" -s -j2 "$pg_config" "$@"
  local install=as_root
  [ -w "$("$PG_BIN/pg_config" --pkglibdir)" ] && install=
  $install make -C "$DLOCK_ROOT" -s "$pg_config" install "$@" >/dev/null
}

# Copies the PostgreSQL installation PG_BIN belongs to into directory $1
# and points PG_BIN and PATH at the copy: dlock is then installed there, as
# yourself, and the original is left alone. Debian's installation keeps its
# usr/... layout (its pg_config finds the headers, the library and share
# directories relative to bindir); one of scripts/build-postgres.sh (a
# prefix with bin/, lib/, include/, share/, which its pg_config and server
# also find relative to bindir) is copied whole.
private_postgresql() {
  local dir=$1 bindir suffix=/usr/lib/postgresql/15/bin root
  bindir=$("$PG_BIN/pg_config" --bindir)
  if [ "${bindir%"$suffix"}" != "$bindir" ]; then
    root=${bindir%"$suffix"}
    log "copying the PostgreSQL installation in ${root:-/} to $dir"
    mkdir -p "$dir/usr/lib/postgresql" "$dir/usr/share/postgresql" "$dir/usr/include"
    cp -a "$root/usr/lib/postgresql/15" "$dir/usr/lib/postgresql/"
    cp -a "$root/usr/share/postgresql/15" "$dir/usr/share/postgresql/"
    cp -a "$root/usr/include/postgresql" "$dir/usr/include/"
    export PG_BIN=$dir/usr/lib/postgresql/15/bin
  elif [ -f "${bindir%/bin}/.complete" ]; then
    root=${bindir%/bin}
    log "copying the PostgreSQL installation in $root to $dir"
    mkdir -p "$dir"
    cp -a "$root/." "$dir/"
    export PG_BIN=$dir/bin
  else
    log "cannot copy a PostgreSQL installation whose bindir is $bindir"
    return 1
  fi
  export PATH="$PG_BIN:$PATH"
}

# The bin directory of the newest build of PostgreSQL MAJOR that
# scripts/build-postgres.sh cached, or nothing.
built_postgresql() {
  local major=$1 cache=${DLOCK_PG_CACHE:-/var/cache/dlock} dir found=
  for dir in "$cache/postgresql-$major".*; do
    [ -f "$dir/.complete" ] && [ -x "$dir/bin/pg_config" ] && found=$dir/bin
  done
  echo "$found"
}

# Builds the client library, the dlock command, the demo and the tests
# with cmake into build/, and installs the library and the command under
# /usr/local (the dlock command on the PATH). Extra arguments go to cmake's
# configure step (-DDLOCK_WERROR=ON).
build_client() {
  log "building the client library, the dlock command and the tests $*"
  cmake -S "$DLOCK_ROOT" -B "$DLOCK_ROOT/build" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$DLOCK_ROOT/build" -j2 >/dev/null
  as_root cmake --install "$DLOCK_ROOT/build" --prefix /usr/local >/dev/null
}

# Starts a new cluster in a fresh temporary directory and points libpq's
# PG* variables at it. Extra arguments are postgresql.conf lines. The
# cluster is stopped and removed when the calling shell exits. The array
# SERVER_ENV (NAME=value words), if set, is added to the server's
# environment only, not to initdb's.
start_cluster() {
  CLUSTER_DIR=$(mktemp -d /tmp/dlock-cluster.XXXXXX)
  chmod 755 "$CLUSTER_DIR"
  [ "$(id -u)" = 0 ] && chown postgres: "$CLUSTER_DIR"
  log "starting a throwaway $(pg_config --version) cluster in $CLUSTER_DIR"
  as_server_user initdb -D "$CLUSTER_DIR/data" -U postgres -A trust \
    -E UTF8 --locale=C.UTF-8 >"$CLUSTER_DIR/initdb.log" 2>&1 || {
    cat "$CLUSTER_DIR/initdb.log" >&2
    return 1
  }
  {
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$CLUSTER_DIR'"
    echo "port = 5432"
    echo "max_connections = 120"
    echo "max_prepared_transactions = 10"
    echo "log_min_messages = warning"
    echo "shared_preload_libraries = 'dlock'"  # dlock.stats counts
    local line
    for line in "$@"; do echo "$line"; done
  } >>"$CLUSTER_DIR/data/postgresql.conf"
  # PGUSER: libpq inside the server (the isolation specs' dblink) logs in as
  # the cluster's superuser, not as the operating system user running it.
  as_server_user env PGUSER=postgres ${SERVER_ENV[@]+"${SERVER_ENV[@]}"} \
    pg_ctl -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" \
    -w -t 60 start >/dev/null
  export PGHOST="$CLUSTER_DIR" PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
  trap stop_cluster EXIT
}

stop_cluster() {
  [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR/data" ] || return 0
  as_server_user pg_ctl -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$CLUSTER_DIR"
  CLUSTER_DIR=
}

# For scripts/build-postgres.sh: a deb-src entry for Debian sid, sources
# only (never binaries from sid on Debian 12), and apt's lists updated.
SID_SOURCES=/etc/apt/sources.list.d/dlock-sid-sources.sources
ensure_sid_sources() {
  if [ ! -f "$SID_SOURCES" ]; then
    log "adding $SID_SOURCES (deb-src only)"
    as_root tee "$SID_SOURCES" >/dev/null <<'SOURCES'
# Added by dlock's scripts/build-postgres.sh: Debian sid's sources only, to
# build other PostgreSQL majors; no binary package comes from here.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  fi
  as_root apt-get update -qq
}

# The version of the source package named (say 18.6-3 gives 18.6: the
# upstream version, without the epoch and the Debian revision), or nothing.
source_version() {
  apt-get source --print-uris "$1" 2>/dev/null |
    sed -nE "s/^'[^']*\/$1_([^-']+)\.orig\.tar\..*/\1/p" | head -n 1
}
