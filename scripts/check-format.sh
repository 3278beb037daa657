#!/usr/bin/env bash
# The C++ style as a check: fails, naming each file, when clang-format
# (Debian's clang-format 14, reading .clang-format) would change any of
# dlock's C++: the extension (src/), the client libraries (clients/), the
# dlock command (cli/), and the tests,
# demo, benchmarks and C++ example (test/, demo/, bench/, examples/cpp/).
# To fix a file: clang-format -i FILE.
# Usage: bash scripts/check-format.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

command -v clang-format >/dev/null || {
  echo "check-format: clang-format is not installed (Debian package clang-format)" >&2
  exit 1
}

dirs=""
for dir in src clients cli test demo bench examples/cpp; do
  [ -d "$dir" ] && dirs="$dirs $dir"
done

status=0
while IFS= read -r -d '' file; do
  if ! clang-format --dry-run --Werror "$file" >/dev/null 2>&1; then
    echo "not formatted: $file"
    status=1
  fi
done < <(find $dirs -type f \( -name '*.cpp' -o -name '*.cc' -o -name '*.h' \
  -o -name '*.hpp' \) -print0 | sort -z)

if [ "$status" = 0 ]; then
  echo "format check: ok"
else
  echo "format check: run clang-format -i on the files above" >&2
fi
exit "$status"
