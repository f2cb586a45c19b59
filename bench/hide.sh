#!/usr/bin/env bash
# What sandbox.hide's search of the workspace costs a run: `sandshim run --dry-run` (the policy,
# the workspace search and the engine arguments; nothing starts) in a generated workspace of
# FILES files (default 100,000: 1,000 directories of 100, a few secrets among them) against the
# same in an empty workspace, N times each, interleaved. Prints p50/p95 and the masked count.
# Asserts nothing.
#
#   bench/hide.sh [BUILD_DIR]             FILES=100000 N=15 bench/hide.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
files=${FILES:-100000}
runs=${N:-15}
[[ -x $bin ]] || {
  echo "hide.sh: $bin is missing: build the sandshim target first" >&2
  exit 2
}

dir=$(mktemp -d /tmp/sandshim-bench-hide.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir" # the sandbox user (65534 for root) must pass through
export HOME=$dir/home XDG_CONFIG_HOME=$dir/config XDG_STATE_HOME=$dir/state XDG_DATA_HOME=$dir/data
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_DATA_HOME"

big=$dir/big
small=$dir/small
mkdir -p "$small" "$big"
chmod 755 "$small" "$big"
git -C "$small" init -q
git -C "$big" init -q
per_dir=100
/usr/bin/python3 - "$big" "$files" "$per_dir" <<'PY'
import os, sys
root, files, per_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(files):
    d = os.path.join(root, f"pkg{i // per_dir:04d}")
    if i % per_dir == 0:
        os.makedirs(d, exist_ok=True)
    name = ".env" if i % 20000 == 7 else f"module_{i % per_dir}.py"
    open(os.path.join(d, name), "w").close()
PY

measure() { # DIR -> milliseconds of one dry run
  local started=$EPOCHREALTIME
  (cd "$1" && "$bin" run --dry-run -- sh -c true >/dev/null)
  echo $(((${EPOCHREALTIME/./} - ${started/./}) / 1000))
}

declare -a t_big t_small
for ((i = 0; i < runs; i++)); do
  t_big+=("$(measure "$big")")
  t_small+=("$(measure "$small")")
done

percentiles() { # NAME VALUES...
  local name=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v name="$name" '{ v[NR] = $1 } END {
    printf "%-28s p50 %5d ms   p95 %5d ms\n", name, v[int((NR + 1) / 2)], v[int(NR * 0.95 + 0.999)] }'
}
masked=$(cd "$big" && "$bin" run --dry-run -- sh -c true | grep -o 'target=[^,]*/\.env' | wc -l)
echo "sandbox.hide: $files files in $((files / per_dir)) directories, $masked masked; $runs dry runs each"
percentiles "dry run, $files files" "${t_big[@]}"
percentiles "dry run, empty workspace" "${t_small[@]}"
