#!/usr/bin/env bash
# The build enforces the layering: a library reaches its own and its dependencies' headers
# (control), and a header of a higher layer is not found (the back edge fails to compile).
# Usage: check.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: check.sh BUILD_DIR}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

if ! cmake --build "$build" --target sandshim_layering_own_layer >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: the control (audit including its own header) does not compile"
    exit 1
fi
if cmake --build "$build" --target sandshim_layering_back_edge >"$log" 2>&1; then
    echo "FAIL: audit/ can include shim/policy.hpp: a back edge compiles"
    exit 1
fi
# GCC says "shim/policy.hpp: No such file or directory", clang "'shim/policy.hpp' file not found".
if ! grep -qE "shim/policy.hpp: No such file or directory|'shim/policy.hpp' file not found" "$log"; then
    cat "$log"
    echo "FAIL: the back edge failed for another reason than the missing include"
    exit 1
fi
echo "layering enforced: audit reaches its own headers, not the shim's"
