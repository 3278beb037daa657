#!/usr/bin/env bash
# Mechanical part of the C++/PostgreSQL wall (src/pg/boundary.h): a glue
# frame may be skipped by PostgreSQL's longjmp, so it must own no C++ object
# with a destructor. Fails when
#  - an owning std:: type appears in src/pg outside the files allowed to
#    build text with src/core under pg_guard(), or
#  - a struct declared in src/pg lacks DLOCK_PLAIN_STRUCT (a static_assert
#    that it is trivially destructible); testing.cpp's tracker has a
#    destructor on purpose, or
#  - a file in src/pg includes a C++ or src/core header after a glue
#    header (PostgreSQL's headers come in with the first glue header, and
#    neither may follow them), or a file other than boundary.h includes
#    pg_headers.h, or
#  - a function whose address src/pg hands to PostgreSQL (a *_hook, a
#    registered callback, a GUC's check/assign/show hook, a memory
#    context callback) is not extern "C": PostgreSQL calls it through a C
#    function pointer, so it must have C linkage like every callback.
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

for file in src/pg/*.h src/pg/*.cpp; do
  late=$(awk '/^#include "/ && !/"\.\.\/core\// { glue = 1; next }
              /^#include/ && glue { print FILENAME ":" FNR ": " $0 }' "$file")
  if [ -n "$late" ]; then
    echo "$late: C++ and src/core headers come before the glue's"
    status=1
  fi
done
hits=$(grep -n '#include "pg_headers.h"' src/pg/*.h src/pg/*.cpp |
  grep -v '^src/pg/boundary.h:' || true)
if [ -n "$hits" ]; then
  echo "pg_headers.h is included through boundary.h only:"
  echo "$hits"
  status=1
fi

# The callbacks, read by a small parser (comments and literals skipped).
python3 - src/pg/*.h src/pg/*.cpp <<'PYEOF' || status=1
import re, sys, glob

# Registrars that take a function PostgreSQL calls later.
REGISTRARS = (r"RegisterXactCallback|RegisterSubXactCallback|on_shmem_exit|"
              r"before_shmem_exit|on_proc_exit|cancel_before_shmem_exit|"
              r"RegisterResourceReleaseCallback|CacheRegisterRelcacheCallback|"
              r"CacheRegisterSyscacheCallback|RegisterTimeout|pqsignal|"
              r"DefineCustom(?:Bool|Int|Real|String|Enum)Variable|"
              r"RegisterExtensionExplainOption|RegisterCustomScanMethods|"
              r"RegisterWaitEventCallback|AddinShmemInitCallback")


def strip(text):
    # Comments and literals out (keeping line numbers), extern "C" kept.
    text = text.replace('extern "C"', "extern_C")
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            out.append("\n" * text[i:j + 1].count("\n"))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(text, open_at, o="(", c=")"):
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == o:
            depth += 1
        elif text[k] == c:
            depth -= 1
            if depth == 0:
                return k
    return len(text)


def split_args(s):
    args, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    args.append(cur.strip())
    return args


files = {f: strip(open(f).read()) for f in sys.argv[1:]}
line_of = lambda text, pos: text.count("\n", 0, pos) + 1

# Where extern "C" { ... } blocks are, per file.
c_blocks = {}
for f, t in files.items():
    c_blocks[f] = [(m.end() - 1, matching(t, m.end() - 1, "{", "}"))
                   for m in re.finditer(r"extern_C\s*\{", t)]

# Every declaration or definition of a function, by name: is it C?
decl = re.compile(r"(?m)^[ \t]*((?:extern_C\s+)?)(?:(?:static|inline|"
                  r"\[\[noreturn\]\])\s+)*[A-Za-z_][\w:<>]*[\s*&]+"
                  r"([A-Za-z_]\w*)\s*\([^;{)]*\)?[^;{]*[;{]")
functions = {}
for f, t in files.items():
    for m in decl.finditer(t):
        c = bool(m.group(1)) or any(a < m.start() < b for a, b in c_blocks[f])
        functions.setdefault(m.group(2), []).append((f, line_of(t, m.start()), c))

# Functions handed to PostgreSQL: hook assignments, registrars' arguments,
# MemoryContextCallback.func.
handed = []
for f, t in files.items():
    for m in re.finditer(r"\b(\w+_hook)\s*=\s*&?\s*([\w:]+)\s*;", t):
        handed.append((f, line_of(t, m.start()), m.group(1), m.group(2)))
    for m in re.finditer(r"\b(\w+_hook)\s*=\s*\[", t):
        handed.append((f, line_of(t, m.start()), m.group(1), "<lambda>"))
    for m in re.finditer(r"(?:\.|->)func\s*=\s*&?\s*([\w:]+)\s*;", t):
        handed.append((f, line_of(t, m.start()), "MemoryContextCallback",
                       m.group(1)))
    for m in re.finditer(r"\b(" + REGISTRARS + r")\s*\(", t):
        close = matching(t, m.end() - 1)
        for arg in split_args(t[m.end():close]):
            arg = arg.lstrip("&").strip()
            if arg.startswith("["):
                handed.append((f, line_of(t, m.start()), m.group(1), "<lambda>"))
            elif re.fullmatch(r"[\w:]+", arg):
                handed.append((f, line_of(t, m.start()), m.group(1), arg))

status = 0
for f, line, via, name in handed:
    if name == "<lambda>":
        print(f"{f}:{line}: a lambda handed to {via} has C++ linkage; "
              "use an extern \"C\" function")
        status = 1
        continue
    decls = functions.get(name.split("::")[-1])
    if decls and not any(c for _, _, c in decls):
        where = ", ".join(f"{df}:{dl}" for df, dl, _ in decls)
        print(f"{f}:{line}: {name} is handed to PostgreSQL ({via}) but is "
              f"not extern \"C\" ({where})")
        status = 1
sys.exit(status)
PYEOF

[ "$status" = 0 ] && echo "boundary check: ok"
exit "$status"
