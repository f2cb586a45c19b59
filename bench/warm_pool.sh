#!/usr/bin/env bash
# Warm mode latency: p50 and p90 of `sh -c true` through sandshim with pool.size = 2 (each run
# starting once the pool is full again, as when an agent's commands come seconds apart), next
# to the same command cold, to a raw `docker run` with sandshim's own flags (its dry run), and to
# a raw `docker exec` into an idle container started with those flags (the floor of warm mode).
# Prints figures and ratios; asserts nothing. Usage: bench/warm_pool.sh [RUNS] (default 15).
set -euo pipefail
runs=${1:-15}
bin=${SANDSHIM_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/sandshim}
dir=$(mktemp -d "${TMPDIR:-/tmp}/sandshim-bench-pool.XXXXXX")
chmod 755 "$dir"
export HOME=$dir/home XDG_STATE_HOME=$dir/home/.local/state SANDSHIM_AUDIT_DB=$dir/audit.db
export SANDSHIM_CONFIG=$dir/config
mkdir -p "$HOME" "$dir/ws"
chmod 755 "$dir/ws"
git -C "$dir/ws" init -q
cd "$dir/ws"
trap 'SANDSHIM_CONFIG=$dir/warm.config "$bin" pool drain >/dev/null 2>&1
[[ -z ${idle_name:-} ]] || "${idle_run[0]}" rm -f "$idle_name" >/dev/null 2>&1; rm -rf "$dir"' EXIT
printf '[pool]\nsize = 0\n' >"$dir/cold.config"
printf '[pool]\nsize = 2\nidle_ttl = 5m\n' >"$dir/warm.config"

ms() { # runs "$@" quietly, prints its wall time in ms
    local start=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 </dev/null
    local end=$EPOCHREALTIME
    echo $(((${end/./} - ${start/./}) / 1000))
}
pct() { # P: percentile of the numbers on stdin
    sort -n | awk -v p="$1" '{a[NR] = $1} END {i = int((NR * p + 99) / 100); print a[i < 1 ? 1 : i]}'
}
idle() { SANDSHIM_CONFIG=$dir/warm.config "$bin" pool status | grep -c "idle," || true; }

cp "$dir/cold.config" "$SANDSHIM_CONFIG"
: >"$dir/raw"
: >"$dir/cold"
: >"$dir/warm"
: >"$dir/exec"
read -r -a idle_run < <(SANDSHIM_DRY_RUN=1 "$bin" run -- sh -c true)
idle_name=${idle_run[2]#--name=}
idle_run=("${idle_run[@]:0:${#idle_run[@]}-3}") # without `sh -c true`
"${idle_run[@]/--interactive/--detach}" sleep 600 >/dev/null
for _ in $(seq "$runs"); do
    ms "${idle_run[0]}" exec "$idle_name" sh -c true >>"$dir/exec"
    read -r -a raw < <(SANDSHIM_DRY_RUN=1 "$bin" run -- sh -c true) # a fresh container name
    ms "${raw[@]}" >>"$dir/raw"
    ms "$bin" run -- sh -c true >>"$dir/cold"
done
cp "$dir/warm.config" "$SANDSHIM_CONFIG"
"$bin" pool fill sh >/dev/null
for _ in $(seq "$runs"); do
    for _ in $(seq 100); do
        (($(idle) >= 2)) && break
        sleep 0.1
    done
    ms "$bin" run -- sh -c true >>"$dir/warm"
done
warm_rows=$("$bin" audit sql "SELECT count(*) AS n FROM runs WHERE warm = 1" --jsonl | tr -dc 0-9)
r50=$(pct 50 <"$dir/raw")
printf '%-34s %8s %8s %8s\n' "sh -c true, $runs runs" p50_ms p90_ms x_raw
for what in raw exec cold warm; do
    p50=$(pct 50 <"$dir/$what")
    printf '%-34s %8s %8s %8s\n' "$what" "$p50" "$(pct 90 <"$dir/$what")" \
        "$(awk -v a="$p50" -v b="$r50" 'BEGIN {printf "%.2f", a / b}')"
done
echo "warm runs served warm: $warm_rows of $runs; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
