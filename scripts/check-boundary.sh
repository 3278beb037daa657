#!/usr/bin/env bash
# Mechanical part of the C++/PostgreSQL wall (src/pg/boundary.h): a glue
# frame may be skipped by PostgreSQL's longjmp, so it must own no C++ object
# with a destructor. Fails when
#  - an owning std:: type appears in src/pg outside the files allowed to
#    build text with src/core under pg_guard(), or
#  - a struct declared in src/pg lacks DLOCK_PLAIN_STRUCT (a static_assert
#    that it is trivially destructible); testing.cpp's tracker has a
#    destructor on purpose.
# Usage: bash scripts/check-boundary.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

allowed='^src/pg/(fenced_update|intervals|testing)\.cpp:'
owning='std::(string|wstring|vector|unique_ptr|shared_ptr|map|multimap|unordered_map|set|unordered_set|list|deque|function|any|variant|stringstream|ostringstream|to_string)\b'
status=0

hits=$(grep -nE "$owning" src/pg/*.h src/pg/*.cpp | grep -vE "$allowed" || true)
if [ -n "$hits" ]; then
  echo "owning std:: types in src/pg outside the allowed files:"
  echo "$hits"
  status=1
fi

for file in $(ls src/pg/*.h src/pg/*.cpp | grep -v testing.cpp); do
  for type in $(sed -nE 's/^[[:space:]]*struct ([A-Za-z_][A-Za-z0-9_]*) \{.*/\1/p' "$file"); do
    if ! grep -qE "DLOCK_PLAIN_STRUCT\\($type\\)" "$file"; then
      echo "$file: struct $type has no DLOCK_PLAIN_STRUCT($type)"
      status=1
    fi
  done
done

[ "$status" = 0 ] && echo "boundary check: ok"
exit "$status"
