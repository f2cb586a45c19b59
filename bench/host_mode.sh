#!/usr/bin/env bash
# The per-call fixed cost of the two image modes side by side: `python3 -c pass`, `node -e 0` and
# `sh -c true` through the shims (cold), N rounds, each round running the default images and
# images.NAME = host back to back in alternating order, so load from elsewhere hits both alike.
# Prints p50 and mean per mode and command, and the machine's load. Asserts nothing.
#
#   bench/host_mode.sh [BUILD_DIR]        (default: build)     N=20 bench/host_mode.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
runs=${N:-20}
system_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[[ -x $bin ]] || { echo "host_mode.sh: $bin is missing: build the sandshim target first" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/sandshim-bench-host.XXXXXX")
trap 'rm -rf "$dir"' EXIT
export HOME=$dir/home XDG_CONFIG_HOME=$dir/home/.config XDG_STATE_HOME=$dir/home/.local/state
export XDG_DATA_HOME=$dir/home/.local/share SANDSHIM_AUDIT_DB=$dir/audit.db
mkdir -p "$XDG_CONFIG_HOME/sandshim" "$dir/ws"
git -C "$dir/ws" init -q
chmod -R a+rX "$dir"
"$bin" install --dir "$dir/shims" >/dev/null
cd "$dir/ws"

config_for() { # MODE
    if [[ $1 == host ]]; then
        printf '[images]\npython3 = host\nnode = host\nsh = host\n'
    fi >"$XDG_CONFIG_HOME/sandshim/config"
}

# One call's wall time in ms, appended to $dir/MODE.NAME.
time_call() { # MODE NAME CMD...
    local mode=$1 name=$2 t0 t1
    shift 2
    config_for "$mode"
    t0=$EPOCHREALTIME
    PATH=$dir/shims:$system_path "$@" >/dev/null 2>&1 || echo "host_mode.sh: $mode $* failed" >&2
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", (b - a) * 1000 }' >>"$dir/$mode.$name"
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), N=$runs"
for mode in default host; do # warm-up: images and page cache
    time_call "$mode" warmup python3 -c pass
done
for ((i = 0; i < runs; i++)); do
    order=(default host)
    ((i % 2 == 0)) || order=(host default)
    for mode in "${order[@]}"; do
        time_call "$mode" python3 python3 -c pass
        time_call "$mode" node node -e 0
        time_call "$mode" sh sh -c true
    done
done
printf '%-8s %-8s %8s %8s\n' mode command p50_ms mean_ms
for name in python3 node sh; do
    for mode in default host; do
        sort -n "$dir/$mode.$name" | awk -v m="$mode" -v c="$name" \
            '{ v[NR] = $1; s += $1 } END { printf "%-8s %-8s %8d %8.0f\n", m, c, v[int((NR + 1) / 2)], s / NR }'
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
