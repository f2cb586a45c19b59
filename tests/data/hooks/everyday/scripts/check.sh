#!/usr/bin/env bash
# The project's own check script: lint, then the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
shellcheck scripts/*.sh
for f in src/*.c; do
  clang-format --dry-run --Werror "$f"
done
make -j2 test
