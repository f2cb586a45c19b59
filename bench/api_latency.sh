#!/usr/bin/env bash
# Cold `sh -c true` three ways, to see what the Engine API path (engine.api = on) costs next to
# the `docker run` client (engine.api = off) and the client alone:
#   raw      the engine client with exactly the flags `sandshim run --dry-run` prints
#   cli      `sandshim run -- sh -c true` with engine.api = off
#   api      the same with engine.api = on (create, attach, wait, start over the socket)
# N rounds; each round runs every variant once, in a fresh random order, and each sample starts
# once the last one's container is gone (bench/lib/rounds.sh). Prints p50/p95 and the ratio to
# raw. Asserts nothing.
#
#   bench/api_latency.sh [BUILD_DIR]        N=20 bench/api_latency.sh build
#   ENGINE=podman bench/api_latency.sh      podman: its API service is started for the bench
#                                           (install/lib/podman_service.sh) unless one answers
set -euo pipefail
# shellcheck source=lib/rounds.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/rounds.sh"

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
runs=${N:-20}
cmd=(sh -c true)
[[ -x $bin ]] || { echo "api_latency.sh: $bin is missing: build the sandshim target first" >&2; exit 2; }

work=$(mktemp -d /tmp/sandshim-api-latency.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
engine=${ENGINE:-docker}
if [[ $engine == podman ]]; then
  # shellcheck source=../install/lib/podman_service.sh
  . "$(dirname "${BASH_SOURCE[0]}")/../install/lib/podman_service.sh"
  trap 'podman_service_stop_if_started; rm -rf "$work"' EXIT
  podman_service_ensure "$work/podman-service.log" || exit 2
fi
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache SANDSHIM_AUDIT_DB=$work/audit.db
unset SANDSHIM_CONFIG SANDSHIM_DRY_RUN SANDSHIM_LOG DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG
mkdir -p "$HOME" "$XDG_CONFIG_HOME/sandshim" "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$work/workspace"
chmod 755 "$work/workspace"
cd "$work/workspace"
printf '[engine]\nname = %s\napi = off\n' "$engine" > "$work/cli.conf"
printf '[engine]\nname = %s\napi = on\n' "$engine" > "$work/api.conf"

# One sample of VARIANT in ms; a run that fails is counted, shown once and left out.
declare -A samples failures
sample() { # VARIANT CMD...
  local name=$1 began rc=0
  shift
  began=$EPOCHREALTIME
  "$@" < /dev/null > /dev/null 2> "$work/err" || rc=$?
  if ((rc == 0)); then
    samples[$name]+="$(awk -v b="$began" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.3f", (e - b) * 1000 }') "
  else
    failures[$name]=$((${failures[$name]:-0} + 1))
    echo "api_latency.sh: $name exited $rc: $(head -c 300 "$work/err")" >&2
  fi
}

variant() {
  local -a engine_args
  case $1 in
    raw)
      eval "engine_args=($(SANDSHIM_CONFIG="$work/cli.conf" "$bin" run --dry-run -- "${cmd[@]}"))"
      if [[ $engine == docker ]]; then
        sample raw env DOCKER_CONFIG="$XDG_STATE_HOME/sandshim/engine-config" "${engine_args[@]}"
      else
        sample raw "${engine_args[@]}"
      fi
      ;;
    cli) sample cli env SANDSHIM_CONFIG="$work/cli.conf" "$bin" run -- "${cmd[@]}" ;;
    api) sample api env SANDSHIM_CONFIG="$work/api.conf" "$bin" run -- "${cmd[@]}" ;;
  esac
}

percentiles() {
  tr ' ' '\n' <<< "$1" | sed '/^$/d' | sort -n |
    awk '{ v[NR] = $1 } END { printf "%.1f %.1f", v[int((NR * 50 + 99) / 100)], v[int((NR * 95 + 99) / 100)] }'
}

variants=(raw cli api)
for v in "${variants[@]}"; do variant "$v"; done # warm-up, not recorded
samples=()
for ((round = 0; round < runs; ++round)); do
  for i in $(round_order ${#variants[@]}); do
    before=$(run_container_count "$engine")
    variant "${variants[i]}"
    settle_run_containers "$engine" "$before"
  done
done

echo "== $engine: cold sh -c true, ms, N=$runs, SEED=$bench_seed, load $(cut -d' ' -f1-3 /proc/loadavg)"
read -r raw50 raw95 <<< "$(percentiles "${samples[raw]:-}")"
printf '  %-6s %8s %8s %9s %9s %7s\n' variant p50 p95 p50/raw p95/raw failed
for v in "${variants[@]}"; do
  read -r p50 p95 <<< "$(percentiles "${samples[$v]:-}")"
  printf '  %-6s %8s %8s %9s %9s %7s\n' "$v" "$p50" "$p95" \
    "$(awk -v a="$p50" -v b="$raw50" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
    "$(awk -v a="$p95" -v b="$raw95" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" "${failures[$v]:-0}"
done
