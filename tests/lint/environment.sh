#!/usr/bin/env bash
# Every environment variable sandshim reads is read through common/environment (one function a
# variable, with its rule), so what the environment can steer is one list. Fails naming any other
# getenv in the sources; the in-container launcher (inside/) is a separate static program that
# links none of sandshim's libraries and reads its own three variables.
# Usage: environment.sh <project root>
set -euo pipefail

root=$1
cd "$root"
mapfile -t offenders < <(grep -rnE '\b(std::)?(secure_)?getenv\(' --include='*.cpp' --include='*.hpp' \
    common audit engine egress shim broker hooks install cli |
    grep -v '^common/environment\.cpp:' || true)
if ((${#offenders[@]} > 0)); then
    printf 'environment read outside common/environment: %s\n' "${offenders[@]}" >&2
    exit 1
fi
echo "environment: every read goes through common/environment"
