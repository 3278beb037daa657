#!/usr/bin/env bash
# Released extension scripts are frozen: a database installed or updated
# with one must stay reproducible. extension/released.sha256 lists every
# released script with its checksum; this fails if one changed or is gone.
# Releasing a version adds its scripts to the list (see docs/development.md).
# Usage: bash scripts/check-released-scripts.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../extension"
if sha256sum --check --quiet --strict released.sha256; then
  echo "released scripts: unchanged ($(wc -l <released.sha256) files)"
else
  echo "a released extension script changed: ship a new version and an upgrade script instead"
  exit 1
fi
