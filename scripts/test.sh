#!/usr/bin/env bash
# Runs every dlock test suite on a fresh throwaway cluster: the static
# checks (the documentation's links among them), the reference's coverage
# of the extension, pg_regress and isolation specs, GoogleTest unit tests
# and libpq stress tests, and the TAP tests (crash and restart, each on
# clusters of their own) and the client examples; then the failure runs in
# their short forms, each with servers of its own: the fault soak,
# failovers under Patroni, sqlsmith, the libFuzzer target and the sanitizer
# build; last, the packages, built, installed, used and purged. Everything
# is compiled with warnings as errors.
# Usage: bash scripts/test.sh   (as root, or as a user with sudo)
#
# The quick tier, for the edit-and-test loop: the static checks, the unit
# tests (GoogleTest, ctest -L unit: no server) and the pg_regress and
# isolation suites; a few minutes from a fresh checkout, most of it
# compiling, and under a minute once built. It needs no root: dlock is
# installed into a private copy of the PostgreSQL installation, the cluster
# runs as yourself, and the unit tests are built in build-quick/ (a full
# build/ is left alone). It installs nothing; without root, it names the
# missing packages and stops.
# Usage: bash scripts/test.sh --quick
#
# The quick tier on another PostgreSQL major, one that
# scripts/build-postgres.sh MAJOR built (run that first, as root); 15, the
# default, is Debian 12's. Only the quick tier runs on another major.
# Usage: bash scripts/test.sh --quick --major 18
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  echo "usage: bash scripts/test.sh [--quick [--major MAJOR]]" >&2
  exit 2
}
MODE=full
MAJOR=15
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;;
    --major)
      [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] || usage
      MAJOR=$2
      shift
      ;;
    *) usage ;;
  esac
  shift
done
if [ "$MAJOR" != 15 ]; then
  [ "$MODE" = quick ] || {
    echo "scripts/test.sh: only the quick tier runs on PostgreSQL $MAJOR" >&2
    exit 2
  }
  PG_BIN=$(built_postgresql "$MAJOR")
  [ -n "$PG_BIN" ] || {
    log "no PostgreSQL $MAJOR built: run bash scripts/build-postgres.sh $MAJOR (as root)"
    exit 2
  }
  export PATH="$PG_BIN:$PATH"
fi

passed=0
failed=0
failed_names=""
suite() {
  local name=$1
  shift
  log "suite: $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_names="$failed_names $name"
  fi
}

static_checks() {
  bash "$DLOCK_ROOT/scripts/check-boundary.sh" &&
    bash "$DLOCK_ROOT/scripts/check-released-scripts.sh" &&
    bash "$DLOCK_ROOT/scripts/check-format.sh" &&
    python3 "$DLOCK_ROOT/scripts/check-doc-links.py" --self-test &&
    python3 "$DLOCK_ROOT/scripts/check-doc-links.py"
}

# Every function, view and setting CREATE EXTENSION dlock makes has its
# entry in docs/reference/ (in a scratch database of the cluster).
doc_reference() {
  python3 "$DLOCK_ROOT/scripts/check-doc-reference.py"
}

regress() {
  make -C "$DLOCK_ROOT" -s installcheck DLOCK_TESTING=1 || {
    cat "$DLOCK_ROOT"/regression.diffs "$DLOCK_ROOT"/output_iso/regression.diffs 2>/dev/null | head -200
    return 1
  }
}

googletest() {
  (cd "$DLOCK_ROOT/build" && ctest --output-on-failure)
}

# A program of its own, built against the installed client library as a
# user's would be (find_package(dlock_client)), run against the cluster.
installed_client() {
  local dir rc=0
  dir=$(mktemp -d /tmp/dlock-consumer.XXXXXX)
  cmake -S "$DLOCK_ROOT/test/consumer" -B "$dir" -DCMAKE_PREFIX_PATH=/usr/local >/dev/null &&
    cmake --build "$dir" >/dev/null && "$dir/consumer" || rc=1
  rm -rf "$dir"
  return $rc
}

# PostgreSQL::Test::Cluster runs initdb itself, so the TAP tests run as the
# server user, from a scratch directory that user owns.
tap() {
  local dir
  dir=$(mktemp -d /tmp/dlock-tap.XXXXXX)
  cp -r "$DLOCK_ROOT/test/tap" "$dir/t"
  cp "$DLOCK_ROOT/README.md" "$dir/README.md"  # 007 runs its quickstart
  cp -r "$DLOCK_ROOT/docs" "$dir/docs"  # 014 runs the pg_cron page's recipe, 015 checks the metrics page
  cp -r "$DLOCK_ROOT/monitoring" "$dir/monitoring"  # 015 serves its queries file
  # 009 runs the CMake build's pooler stress program (the googletest suite
  # builds it); without it, 009 fails and says so.
  if [ -x "$DLOCK_ROOT/build/dlock_pooler_stress" ]; then
    cp "$DLOCK_ROOT/build/dlock_pooler_stress" "$dir/t/"
  fi
  [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
  local pgxs_test
  pgxs_test=$(dirname "$(pg_config --pgxs)")/../../src/test
  (cd "$dir" && as_server_user env PATH="$PATH" \
    PERL5LIB="$pgxs_test/perl" PG_REGRESS="$pgxs_test/regress/pg_regress" \
    prove t/*.pl) || {
    tail -n 50 "$dir"/tmp_check/log/*.log 2>/dev/null
    rm -rf "$dir"
    return 1
  }
  rm -rf "$dir"
}

summary() {
  if [ "$failed" -gt 0 ]; then
    log "failed suites:$failed_names"
  fi
  echo "suites: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# The unit tests alone, built into build-quick/ without optimization or
# debug information, which compiles fastest.
unit_tests() {
  local dir=$DLOCK_ROOT/build-quick
  log "building the unit tests in $dir"
  cmake -S "$DLOCK_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=None -DDLOCK_WERROR=ON \
    >/dev/null &&
    cmake --build "$dir" -j2 --target dlock_core_tests dlock_cli_tests \
      dlock_history_tests dlock_client_cpp_tests >/dev/null &&
    (cd "$dir" && ctest -L unit --output-on-failure)
}

if [ "$MODE" = quick ]; then
  missing=$(missing_packages $BUILD_PACKAGES)
  if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
      log "missing packages: $missing (as root: apt-get install $missing)"
      exit 2
    fi
    install_packages $missing
  fi
  QUICK_DIR=$(mktemp -d /tmp/dlock-quick.XXXXXX)
  chmod 755 "$QUICK_DIR"
  quick_cleanup() {
    stop_cluster
    rm -rf "$QUICK_DIR"
  }
  trap quick_cleanup EXIT
  private_postgresql "$QUICK_DIR/pg"
  build_and_install --incremental DLOCK_TESTING=1 WERROR=1
  # No crash is tested here and the cluster is thrown away: without fsync
  # the suites' CREATE DATABASEs and the shutdown do not wait on the disk,
  # which halves a built run.
  start_cluster "fsync = off"
  trap quick_cleanup EXIT # start_cluster set its own
  suite "static checks" static_checks
  suite "googletest (unit)" unit_tests
  suite "documented reference" doc_reference
  suite "pg_regress + isolation" regress
  log "the quick tier took $SECONDS s"
  summary
  exit
fi

# The failure runs' programs: Patroni and etcd (failover), curl (Patroni's
# REST API), sqlsmith, and clang with its sanitizer and libFuzzer runtimes;
# pg_cron and the Prometheus exporter (TAP); what the client examples run
# on; the package build's tools.
ensure_packages patroni etcd-server curl sqlsmith clang libclang-rt-14-dev \
  postgresql-15-cron prometheus-postgres-exporter python3-psycopg2 \
  debhelper postgresql-server-dev-all
# Node.js and npm, unless a Node.js with its own npm is installed already.
command -v npm >/dev/null || ensure_packages nodejs npm
# On a machine with systemd, the exporter's package starts a service on all
# interfaces; the tests start their own exporter on loopback.
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  as_root systemctl disable --now prometheus-postgres-exporter >/dev/null 2>&1 || true
fi
# The test build (test-only functions, warnings as errors) goes into a
# private copy of the PostgreSQL installation, made after the packages above
# (pg_cron) are in: the system's stays as it was. Every suite below runs
# on the copy (PG_BIN and PATH point at it), except the packages' test,
# which installs into the system's on purpose.
SYSTEM_PATH=$PATH
# dlock's files in the system's installation, to prove at the end that the
# run left them as it found them (absent, the demo's build, or a package's).
system_dlock_files() {
  local pg_config=/usr/lib/postgresql/15/bin/pg_config
  find "$("$pg_config" --pkglibdir)" "$("$pg_config" --sharedir)/extension" \
    -maxdepth 1 -name 'dlock*' -type f -print0 2>/dev/null |
    sort -z | xargs -0 -r sha256sum
}
system_dlock_before=$(system_dlock_files)
system_untouched() {
  [ "$(system_dlock_files)" = "$system_dlock_before" ] || {
    log "the system's PostgreSQL has other dlock files than before the run"
    return 1
  }
}
TEST_DIR=$(mktemp -d /tmp/dlock-test.XXXXXX)
chmod 755 "$TEST_DIR"
full_cleanup() {
  stop_cluster
  rm -rf "$TEST_DIR"
}
trap full_cleanup EXIT
private_postgresql "$TEST_DIR/pg"
build_and_install DLOCK_TESTING=1 WERROR=1
build_client -DDLOCK_WERROR=ON
start_cluster
trap full_cleanup EXIT # start_cluster set its own

suite "static checks" static_checks
suite "documented reference" doc_reference
suite "pg_regress + isolation" regress
suite "googletest (unit + libpq stress)" googletest
suite "installed client library" installed_client
suite "tap" tap
suite "client examples (psql, Python, Node.js, C++)" bash "$DLOCK_ROOT/examples/run.sh"
# The failure runs, short; docs/development.md gives the long forms.
suite "fault soak" bash "$DLOCK_ROOT/test/soak/run.sh"
suite "failover (Patroni, etcd)" bash "$DLOCK_ROOT/test/failover/run.sh"
suite "sqlsmith" bash "$DLOCK_ROOT/test/sqlsmith/run.sh" --queries 5000
suite "libFuzzer (src/core)" bash "$DLOCK_ROOT/test/fuzz/run.sh" 60
# Last: it rebuilds the extension with the sanitizers (in a copy of the
# server's installation of its own).
suite "ASan + UBSan (regress, isolation)" bash "$DLOCK_ROOT/scripts/sanitize.sh"
# On the system's PostgreSQL, last: it installs the packages there, then
# puts back the files they replaced.
suite "packages (PGXN zip, Debian)" env PG_BIN=/usr/lib/postgresql/15/bin \
  PATH="$SYSTEM_PATH" bash "$DLOCK_ROOT/test/packaging/run.sh"
suite "the system's PostgreSQL as it was" system_untouched

summary
