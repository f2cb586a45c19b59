#!/usr/bin/env bash
# The build enforces the layering: per row of tests/CMakeLists.txt's SANDSHIM_LAYER_ROWS, a
# library reaches its own headers (the control) and a header of a higher layer is not found (the
# back edge fails to compile, for that reason and no other). Reports every row, then fails if any
# row failed.
# Usage: check.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: check.sh BUILD_DIR}
edges=$build/tests/layering/edges.txt
log=$(mktemp)
trap 'rm -f "$log"' EXIT

if [[ ! -s $edges ]]; then
  echo "FAIL: $edges is missing or empty: configure the build with the tests on"
  exit 1
fi
failures=0
rows=0
while read -r library own higher; do
  rows=$((rows + 1))
  if ! cmake --build "$build" --target "sandshim_layering_${library}_own" >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: the control ($library including its own $own) does not compile"
    failures=$((failures + 1))
    continue
  fi
  if cmake --build "$build" --target "sandshim_layering_${library}_back_edge" >"$log" 2>&1; then
    echo "FAIL: $library can include $higher: a back edge compiles"
    failures=$((failures + 1))
    continue
  fi
  # GCC says "X: No such file or directory", clang "'X' file not found".
  if ! grep -qE "$higher: No such file or directory|'$higher' file not found" "$log"; then
    cat "$log"
    echo "FAIL: $library's back edge to $higher failed for another reason than the missing include"
    failures=$((failures + 1))
    continue
  fi
  echo "ok: $library reaches $own, not $higher"
done <"$edges"
if ((failures > 0)); then
  echo "FAIL: $failures of $rows layering rows"
  exit 1
fi
echo "layering enforced: $rows rows"
