#!/usr/bin/env bash
# A many-invocation workload as agents produce it: a host shell script that calls `python3 -c`
# 200 times, run natively (NATIVE_PYTHON, default /usr/bin/python3), through the shims cold (pool.size = 0), and warm with the launcher and
# with exec (pool.size = POOL_SIZE); prints wall times, ratios to native, and how many runs of each
# warm script were served warm (the audit's `warm`). Asserts nothing.
#
#   bench/many_calls.sh [BUILD_DIR]     CALLS=200 POOL_SIZE=4 bench/many_calls.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
calls=${CALLS:-200}
pool_size=${POOL_SIZE:-4}
work=$(mktemp -d /tmp/sandshim-many.XXXXXX)
chmod 755 "$work"
cleanup() {
  for conf in "$work"/*.conf; do
    SANDSHIM_CONFIG=$conf "$bin" pool drain > /dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache SANDSHIM_AUDIT_DB=$work/audit.db
unset SANDSHIM_CONFIG SANDSHIM_LOG DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG
mkdir -p "$HOME" "$work/workspace" "$work/shims"
chmod 755 "$work/workspace"
cd "$work/workspace"
ln -s "$bin" "$work/shims/python3"
# Native is the system interpreter itself: a version manager's shim first on PATH (pyenv's is a
# bash script) would add its own start-up to every native call and flatter the ratios.
mkdir -p "$work/native"
ln -s "${NATIVE_PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}" "$work/native/python3"
printf '[pool]\nsize = 0\n' > "$work/cold.conf"
printf '[pool]\nsize = %s\nstart = launcher\n' "$pool_size" > "$work/launcher.conf"
printf '[pool]\nsize = %s\nstart = exec\n' "$pool_size" > "$work/exec.conf"

# The agent's script: one short interpreter call after another, each checking its output.
cat > "$work/script.sh" << SCRIPT
for i in \$(seq $calls); do
  [ "\$(python3 -c 'print(6 * 7)')" = 42 ] || { echo "call \$i failed" >&2; exit 1; }
done
SCRIPT

wall_s() { # CONFIG PATH_PREFIX: the script's wall time in seconds
  local start=$EPOCHREALTIME
  SANDSHIM_CONFIG=$1 PATH=$2$PATH bash "$work/script.sh" < /dev/null > /dev/null
  awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.2f", e - s }'
}
warm_runs_since() { # START_MS
  "$bin" audit sql "SELECT count(*) AS n FROM runs WHERE warm = 1 AND start_ms >= $1" --jsonl |
    sed -n 's/.*"n":\([0-9]*\).*/\1/p'
}

echo "== $calls calls of python3 -c, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
native=$(wall_s "$work/cold.conf" "$work/native:")
printf '  %-24s %8s s\n' native "$native"
for variant in cold launcher exec; do
  conf=$work/$variant.conf
  if [[ $variant != cold ]]; then
    SANDSHIM_CONFIG=$conf "$bin" pool fill python3 > /dev/null
  fi
  since=$(date +%s%3N)
  t=$(wall_s "$conf" "$work/shims:")
  warm=$(warm_runs_since "$since")
  label=$variant
  [[ $variant == cold ]] || label="warm ($variant, pool $pool_size)"
  printf '  %-24s %8s s  %6.1fx native  %s of %s runs warm\n' "$label" "$t" \
    "$(awk -v a="$t" -v b="$native" 'BEGIN { print a / b }')" "${warm:-0}" "$calls"
done
