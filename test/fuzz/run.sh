#!/usr/bin/env bash
# Builds the libFuzzer target test/fuzz/core_fuzz.cpp from src/core with
# AddressSanitizer and UndefinedBehaviorSanitizer, and runs it.
#
#   test/fuzz/run.sh [SECONDS [LIBFUZZER_FLAG...]]     (default 60 s)
#
# e.g. `test/fuzz/run.sh 3600 -rss_limit_mb=4096`: the process grows to
# about 0.9 GB in ten minutes (the sanitizers' allocator), and libFuzzer
# stops at 2 GB by default.
#
# Needs clang++ with libFuzzer (Debian: clang, libclang-rt-14-dev). The
# committed seeds in test/fuzz/corpus/ are read, never written: what the run
# learns goes to a temporary directory removed at the end. A finding stops
# the run with a non-zero exit; its input is kept in
# $FUZZ_ARTIFACTS (default: a new directory under $TMPDIR, printed) and
# replays with `core_fuzz <file>` (the binary is kept beside it).
set -euo pipefail

seconds=${1:-60}
[ $# -gt 0 ] && shift
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || {
  echo "usage: $0 [SECONDS [LIBFUZZER_FLAG...]]" >&2
  exit 2
}
root=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${CXX_FUZZ:-clang++}
command -v "$cxx" > /dev/null || {
  echo "$0: $cxx not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
}

work=$(mktemp -d -t dlock-fuzz.XXXXXX)
artifacts=${FUZZ_ARTIFACTS:-$work/findings}
mkdir -p "$artifacts" "$work/corpus"
cleanup() {
  # Keep the directory only if it holds a finding.
  [[ $artifacts == "$work"/* && -n $(ls -A "$artifacts") ]] || rm -rf "$work"
}
trap cleanup EXIT

"$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I "$root/src/core" "$root"/src/core/*.cpp "$root/test/fuzz/core_fuzz.cpp" \
  -o "$work/core_fuzz"

# libFuzzer logs a line per new input: kept in a file, shown only when
# something is found; a clean run prints its final figures.
status=0
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$work/core_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
  -timeout=10 -artifact_prefix="$artifacts/" "$@" \
  "$work/corpus" "$root/test/fuzz/corpus" 2> "$work/fuzz.log" || status=$?
if [[ $status -ne 0 ]]; then
  cp "$work/core_fuzz" "$work/fuzz.log" "$artifacts/"
  tail -n 80 "$work/fuzz.log" >&2
  echo "core_fuzz: finding in $artifacts (replay: $artifacts/core_fuzz FILE)" >&2
else
  grep -E '^(stat::|Done )' "$work/fuzz.log" >&2 || true
fi
exit $status
