#!/usr/bin/env bash
# Cold start-to-exit latency of `sandshim run -- sh -c true` under runc and under runsc (gVisor),
# side by side: N runs of each, interleaved run by run so load from elsewhere hits both alike.
# Prints p50/p95 and runsc's ratio to runc. Asserts nothing.
#
#   bench/gvisor.sh [BUILD_DIR]        ENGINE=podman N=15 bench/gvisor.sh
# docker needs runsc registered (install/deps.sh --with-gvisor); podman runs /usr/bin/runsc.
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
engine=${ENGINE:-podman}
runs=${N:-15}
[[ -x $bin ]] || {
  echo "gvisor.sh: $bin is missing: build the sandshim target first" >&2
  exit 2
}

dir=$(mktemp -d /tmp/sandshim-bench-gvisor.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export HOME=$dir/home XDG_CONFIG_HOME=$dir/config XDG_STATE_HOME=$dir/state XDG_DATA_HOME=$dir/data
mkdir -p "$HOME" "$XDG_CONFIG_HOME/sandshim" "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$dir/ws"
chmod 755 "$dir" "$dir/ws"
git -C "$dir/ws" init -q
cd "$dir/ws"

measure() { # RUNTIME -> milliseconds of one run
  printf '[engine]\nname = %s\n[sandbox]\nruntime = %s\n' "$engine" "$1" >"$XDG_CONFIG_HOME/sandshim/config"
  local started=$EPOCHREALTIME
  "$bin" run -- sh -c true || echo "gvisor.sh: a $1 run exited $? (timed all the same)" >&2
  echo $(((${EPOCHREALTIME/./} - ${started/./}) / 1000))
}

declare -a runc runsc
measure runc >/dev/null
measure runsc >/dev/null
for ((i = 0; i < runs; i++)); do
  runc+=("$(measure runc)")
  runsc+=("$(measure runsc)")
done

p50() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
p95() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int(NR * 0.95 + 0.999)] }'; }
echo "$engine, cold runs of sh -c true, $runs each, interleaved"
printf '%-6s p50 %5d ms   p95 %5d ms\n' runc "$(p50 "${runc[@]}")" "$(p95 "${runc[@]}")"
printf '%-6s p50 %5d ms   p95 %5d ms\n' runsc "$(p50 "${runsc[@]}")" "$(p95 "${runsc[@]}")"
awk -v a="$(p50 "${runsc[@]}")" -v b="$(p50 "${runc[@]}")" 'BEGIN { printf "runsc/runc p50 ratio %.2f\n", a / b }'
