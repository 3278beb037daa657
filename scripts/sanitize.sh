#!/usr/bin/env bash
# Runs the pg_regress and isolation suites against dlock built with
# AddressSanitizer and UndefinedBehaviorSanitizer (g++'s runtimes), and
# fails if a suite fails or a sanitizer reported anything.
#
# Nothing outside a temporary directory changes: dlock is built in a copy of
# the tree (no sanitizer objects are left in it) and installed into a copy of
# the PostgreSQL installation PG_BIN belongs to (the system's by default),
# which pg_config and the server locate relative to their own binaries.
#
# Only the server has the sanitizer runtime preloaded (initdb runs without):
# PostgreSQL itself is not instrumented, and the runtime must be loaded
# before anything else, dlock.so, which needs it, included. The
# preload also makes the runtime's longjmp interceptors catch PostgreSQL's
# own siglongjmp (ereport(ERROR) and PG_RE_THROW), so that the stack a
# longjmp skips is unpoisoned.
#
# Usage: bash scripts/sanitize.sh [MAKE VARIABLES]   (as root, or with sudo)
#   bash scripts/sanitize.sh                        every suite
#   bash scripts/sanitize.sh REGRESS=fencing ISOLATION=   one suite
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SANITIZERS=address,undefined
SOURCE_ROOT=$DLOCK_ROOT

ensure_packages

WORK_DIR=$(mktemp -d /tmp/dlock-sanitize.XXXXXX)
chmod 755 "$WORK_DIR"
cleanup() {
  stop_cluster
  rm -rf "$WORK_DIR"
}
trap cleanup EXIT

# What the PGXS build and its suites read, copied; build_and_install and
# make work on the copy from here on.
private_tree() {
  mkdir "$WORK_DIR/src"
  cp -a "$SOURCE_ROOT"/{Makefile,dlock.control,extension,src,sql,expected} "$WORK_DIR/src/"
  mkdir "$WORK_DIR/src/test"
  cp -a "$SOURCE_ROOT/test/isolation" "$WORK_DIR/src/test/"
  DLOCK_ROOT=$WORK_DIR/src
}

private_postgresql "$WORK_DIR/pg"
private_tree
build_and_install DLOCK_TESTING=1 WERROR=1 SANITIZE=$SANITIZERS

# The runtimes dlock.so was linked against are the ones to preload, ASan's
# first, then g++'s separate UBSan runtime: a runtime reads its options from
# /proc/self/environ when it starts, and the server overwrites that memory
# with its process titles, so it starts with the postmaster, not when a
# backend loads dlock.so. Then sanitizer_start.c's library (see there why).
asan=$(ldd "$DLOCK_ROOT/dlock.so" | awk '/libasan|libclang_rt\.asan/ { print $3; exit }')
ubsan=$(ldd "$DLOCK_ROOT/dlock.so" | awk '/libubsan/ { print $3; exit }')
[ -n "$asan" ] || {
  log "dlock.so is not linked against an AddressSanitizer runtime"
  exit 1
}
cc -shared -fPIC -O2 -o "$WORK_DIR/sanitizer_start.so" \
  "$SOURCE_ROOT/scripts/sanitizer_start.c" -ldl

# A backend that finds an error writes its report (ASan's to
# $REPORT_DIR/asan.PID, UBSan's to the server's log) and aborts: a crash
# the suites see too.
# detect_leaks=0: the server is not instrumented and leaves its memory to
# the end of the process by design. Stack use after return is checked, the
# frames a longjmp skips included (the runtime lets go of them at the jump).
# ASan reports a segfault, a bus error or an abort (std::terminate) with
# the stack; SIGFPE stays PostgreSQL's own, which turns it into an ERROR.
REPORT_DIR=$WORK_DIR/reports
mkdir "$REPORT_DIR"
chown "$SERVER_USER" "$REPORT_DIR"
SERVER_ENV=(
  "LD_PRELOAD=$asan${ubsan:+:$ubsan}:$WORK_DIR/sanitizer_start.so"
  "ASAN_OPTIONS=log_path=$REPORT_DIR/asan:detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=1:handle_segv=1:handle_sigbus=1:handle_abort=1:handle_sigfpe=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
)
log "server runs with ${SERVER_ENV[*]}"
start_cluster
trap cleanup EXIT # start_cluster set its own

started=$SECONDS
suites_ok=1
make -C "$DLOCK_ROOT" -s PG_CONFIG="$PG_BIN/pg_config" installcheck \
  DLOCK_TESTING=1 SANITIZE=$SANITIZERS "$@" || {
  suites_ok=0
  cat "$DLOCK_ROOT"/regression.diffs "$DLOCK_ROOT"/output_iso/regression.diffs \
    2>/dev/null | head -200 || true
}
log "suites took $((SECONDS - started)) s"
# g++'s UBSan runtime, beside ASan's, writes its reports to stderr whatever
# log_path says: to the server's log, kept with the reports.
grep -E -A 30 'Sanitizer|runtime error:' "$CLUSTER_DIR/server.log" \
  >"$REPORT_DIR/server.log" || rm "$REPORT_DIR/server.log"
stop_cluster

reports=$(find "$REPORT_DIR" -type f | sort)
if [ -n "$reports" ]; then
  for f in $reports; do
    log "sanitizer report $(basename "$f"):"
    head -n 60 "$f" >&2
  done
  log "sanitizer reports: $(echo "$reports" | wc -l)"
  exit 1
fi
[ "$suites_ok" = 1 ] || {
  log "a suite failed"
  exit 1
}
log "no sanitizer reports; suites passed"
