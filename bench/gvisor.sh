#!/usr/bin/env bash
# Start-to-exit latency of `sandshim run -- sh -c true` under runc and under runsc (gVisor), side
# by side in one session: cold runs, and warm runs from a pool (`pool.start = exec`, and
# `pool.start = launcher`, which runsc runs through exec: the launcher's socket is in gVisor's
# own /tmp). N rounds; in each every variant runs once, in a fresh random order
# (bench/lib/rounds.sh), and the sample's background work (a warm pool's refill, the removal of
# the container a run returned before) ends, untimed, before the next one starts, so load from
# elsewhere hits every variant alike. Prints p50/p95 per variant and runsc's p50 ratio to runc
# for each mode, and the load average before and after. Asserts nothing.
#
#   bench/gvisor.sh [BUILD_DIR]        ENGINE=podman N=15 bench/gvisor.sh
# docker needs runsc registered (install/deps.sh --with-gvisor); podman runs /usr/bin/runsc.
set -euo pipefail
# shellcheck source=lib/rounds.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/rounds.sh"

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
engine=${ENGINE:-docker}
runs=${N:-15}
[[ -x $bin ]] || {
  echo "gvisor.sh: $bin is missing: build the sandshim target first" >&2
  exit 2
}

dir=$(mktemp -d /tmp/sandshim-bench-gvisor.XXXXXX)
export HOME=$dir/home XDG_CONFIG_HOME=$dir/config XDG_STATE_HOME=$dir/state XDG_DATA_HOME=$dir/data
unset SANDSHIM_CONFIG SANDSHIM_DRY_RUN SANDSHIM_LOG
mkdir -p "$HOME" "$XDG_CONFIG_HOME/sandshim" "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$dir/ws"
chmod 755 "$dir" "$dir/ws"
git -C "$dir/ws" init -q
cd "$dir/ws"

k_variants=(runc/cold runsc/cold runc/warm-exec runsc/warm-exec runc/warm-launcher runsc/warm-launcher)

config_of() { # VARIANT -> its config file
  local runtime=${1%%/*} mode=${1#*/} file=$dir/${1//\//-}.conf
  printf '[engine]\nname = %s\n[sandbox]\nruntime = %s\n' "$engine" "$runtime" >"$file"
  case $mode in
    warm-exec) printf '[pool]\nsize = 1\nstart = exec\nidle_ttl = 10m\n' >>"$file" ;;
    warm-launcher) printf '[pool]\nsize = 1\nstart = launcher\nidle_ttl = 10m\n' >>"$file" ;;
  esac
  echo "$file"
}

# Warm variants' pools outlive the bench: drain them before the home that records them goes.
cleanup() {
  local variant
  for variant in "${k_variants[@]}"; do
    [[ $variant == */cold ]] || SANDSHIM_CONFIG=$(config_of "$variant") "$bin" pool drain >/dev/null 2>&1 || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT

# Untimed: fills (or waits for the refill of) the variant's pool; `pool fill` takes the pool's
# lock, which a background refill holds.
settle() { # VARIANT
  [[ $1 == */cold ]] || SANDSHIM_CONFIG=$(config_of "$1") "$bin" pool fill sh </dev/null >/dev/null 2>&1 || true
}

declare -A samples failures
measure() { # VARIANT
  local config started before status=0
  config=$(config_of "$1")
  settle "$1"
  before=$(run_container_count "$engine")
  started=$EPOCHREALTIME
  SANDSHIM_CONFIG=$config "$bin" run -- sh -c true </dev/null >/dev/null 2>"$dir/last.err" || status=$?
  local ms=$(((${EPOCHREALTIME/./} - ${started/./}) / 1000))
  settle "$1"
  settle_run_containers "$engine" "$before"
  if ((status != 0)); then
    failures[$1]=$((${failures[$1]:-0} + 1))
    echo "gvisor.sh: a $1 run exited $status: $(head -c 300 "$dir/last.err")" >&2
    return 0
  fi
  samples[$1]+="$ms "
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for variant in "${k_variants[@]}"; do # warm-up, unrecorded: images cached, pools filled
  measure "$variant"
done
samples=() failures=()
count=${#k_variants[@]}
for ((i = 0; i < runs; i++)); do
  for j in $(round_order "$count"); do
    measure "${k_variants[j]}"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

p50() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
p95() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int(NR * 0.95 + 0.999)] }'; }
echo "$engine, sh -c true start to exit, $runs rounds, order random per round (SEED=$bench_seed); load $load_before before, $load_after after ($(nproc) CPUs)"
for variant in "${k_variants[@]}"; do
  read -ra values <<<"${samples[$variant]:-}"
  if ((${#values[@]} == 0)); then
    printf '%-20s no successful run (%s failed)\n' "$variant" "${failures[$variant]:-0}"
    continue
  fi
  printf '%-20s p50 %5d ms   p95 %5d ms   (%d runs, %d failed)\n' "$variant" "$(p50 "${values[@]}")" \
    "$(p95 "${values[@]}")" "${#values[@]}" "${failures[$variant]:-0}"
done
for mode in cold warm-exec warm-launcher; do
  read -ra a <<<"${samples[runsc/$mode]:-0}"
  read -ra b <<<"${samples[runc/$mode]:-0}"
  awk -v m="$mode" -v a="$(p50 "${a[@]}")" -v b="$(p50 "${b[@]}")" \
    'BEGIN { if (b > 0) printf "runsc/runc p50 ratio, %s: %.2f\n", m, a / b }'
done
