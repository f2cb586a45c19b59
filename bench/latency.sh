#!/usr/bin/env bash
# Start-to-exit latency of one sandboxed command, next to what it would cost without sandshim.
# For `sh -c true`, `python -c pass` and `node -e 0`, N runs of each variant, interleaved run by
# run in one session so that load from elsewhere hits every variant alike:
#   raw    the engine client alone, with exactly the flags `sandshim run --dry-run` prints
#   seed   the same flags through `timeout 30s docker run …` in a bash script (the naive wrapper)
#   cold   `sandshim run -- CMD`
#   warm   `sandshim run -- CMD` with `pool.size` set, when this build has a warm pool
#   broker `sandshim run -- CMD` as a thin client of a private broker (as root, with the system
#          user `sandshim` of install/lib/broker.sh; BROKER=0 leaves it out)
# Prints p50/p95 and each variant's ratio to raw, the shim's own peak RSS, the broker's per-run
# overhead (client's request to the worker's start, plus the worker's end to the client's exit,
# from their SANDSHIM_LOG=debug timestamps) and the broker's RSS at idle. Asserts nothing.
#
#   bench/latency.sh [BUILD_DIR]            (default: build)
#   N=30 POOL_SIZE=2 SANDSHIM_BIN=build/sandshim bench/latency.sh
#
# Everything runs as the caller against the engine sandshim finds, with HOME, XDG dirs, config
# and the audit database in a fresh directory; containers have no network (sandshim's default).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
runs=${N:-30}
pool_size=${POOL_SIZE:-2}
warmup=${WARMUP:-2}
k_commands=("sh -c true" "python -c pass" "node -e 0")

if [[ ! -x $bin ]]; then
  echo "latency.sh: $bin is missing: build the sandshim target first" >&2
  exit 2
fi

# An isolated home: nothing of the caller's config, state or audit database is read or written.
work=$(mktemp -d /tmp/sandshim-latency.XXXXXX)
chmod 755 "$work"
# Warm runs leave a refilled pool behind: drain it before the home that records it goes.
cleanup() {
  if [[ -f $work/warm.conf ]] && has_warm_mode; then
    SANDSHIM_CONFIG="$work/warm.conf" "$bin" pool drain > /dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache SANDSHIM_AUDIT_DB=$work/audit.db
unset SANDSHIM_CONFIG SANDSHIM_DRY_RUN SANDSHIM_LOG DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$work/workspace"
chmod 755 "$work/workspace"
cd "$work/workspace"
printf '[pool]\nsize = %s\n' "$pool_size" > "$work/warm.conf"

# The seed's wrapper: a bash script around `timeout 30s docker run`.
cat > "$work/seed.sh" << 'EOF'
#!/usr/bin/env bash
timeout 30s "$@"
EOF
chmod 755 "$work/seed.sh"

has_warm_mode() {
  "$bin" policy show 2> /dev/null | grep -q 'pool\.size'
}

engine_args=()
# The engine command line sandshim would run for CMD, with a fresh container name, as an array.
engine_line() {
  local line
  line=$("$bin" run --dry-run -- "$@")
  eval "engine_args=($line)"
}

# Wall time of one command in milliseconds (3 decimals), its output discarded. A run that fails
# (a deadline passed on an overloaded machine, say) is counted and left out of the figures.
declare -A samples failures
time_ms() {
  local key=$1 start end status=0
  shift
  start=$EPOCHREALTIME
  "$@" < /dev/null > /dev/null 2> "$work/last.err" || status=$?
  end=$EPOCHREALTIME
  if ((status != 0)); then
    failures[$key]=$((${failures[$key]:-0} + 1))
    echo "latency.sh: $key exited $status: $(head -c 300 "$work/last.err")" >&2
    return 0
  fi
  samples[$key]+="$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", (e - s) * 1000 }') "
}

variant() {
  local name=$1 cmd=$2 record=$3
  local -a argv
  read -ra argv <<< "$cmd"
  local key=$name/$cmd
  [[ $record == yes ]] || key=warmup
  case $name in
    raw)
      engine_line "${argv[@]}"
      time_ms "$key" env DOCKER_CONFIG="$XDG_STATE_HOME/sandshim/engine-config" "${engine_args[@]}"
      ;;
    seed)
      engine_line "${argv[@]}"
      time_ms "$key" env DOCKER_CONFIG="$XDG_STATE_HOME/sandshim/engine-config" \
        "$work/seed.sh" "${engine_args[@]}"
      ;;
    cold) time_ms "$key" "$bin" run -- "${argv[@]}" ;;
    warm) time_ms "$key" env SANDSHIM_CONFIG="$work/warm.conf" "$bin" run -- "${argv[@]}" ;;
    broker) time_ms "$key" "${broker_client[@]}" "$bin" run -- "${argv[@]}" ;;
  esac
}

# A private broker as the system user `sandshim`, on a socket in the bench's directory.
broker_client=()
start_bench_broker() {
  [[ ${BROKER:-1} != 0 && $(id -u) == 0 ]] || return 1
  # shellcheck source=../install/lib/broker.sh
  . "$here/../install/lib/broker.sh"
  broker_ensure_user > /dev/null 2>&1 || return 1
  install -m 755 "$bin" "$work/sandshim"
  broker_start "$work/sandshim" "$work/run/broker.sock" "$work/broker" --max-runs-per-user 64 || return 1
  broker_client=(env SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$work/run/broker.sock")
}

# Milliseconds the broker adds to one run: from the client's request to the worker's start, and
# from the worker's end to the client's exit (both on CLOCK_MONOTONIC, logged at debug).
broker_overhead() {
  SANDSHIM_LOG=debug "${broker_client[@]}" "$bin" run -- "$@" < /dev/null 2>&1 > /dev/null |
    awk '/broker: request sent at/ { s = $NF } /broker: worker started at/ { w = $NF }
         /broker: worker ended at/ { e = $NF } /broker: exit received at/ { x = $NF }
         END { if (s && w && e && x) printf "%.3f %.3f\n", w - s, x - e }'
}

# p50 and p95 (nearest rank) of a list of milliseconds.
percentiles() {
  tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g |
    awk '{ v[NR] = $1 } END { p50 = v[int((NR * 50 + 99) / 100)]; p95 = v[int((NR * 95 + 99) / 100)]; printf "%.1f %.1f", p50, p95 }'
}

ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "n/a" }'
}

# The shim's own high-water mark (VmHWM, KiB), which it logs at exit with SANDSHIM_LOG=debug.
peak_rss_kib() {
  SANDSHIM_LOG=debug "$@" < /dev/null 2>&1 > /dev/null | sed -n 's/.*peak RSS \([0-9]*\) KiB.*/\1/p' | tail -1
}

variants=(raw seed cold)
warm_note=""
if has_warm_mode; then
  variants+=(warm)
else
  warm_note="n/a (no warm mode in this build)"
fi
broker_note="n/a (needs root and the system user sandshim; BROKER=0 skips it)"
stop_bench_broker() { :; }
if start_bench_broker; then
  variants+=(broker)
  broker_note=""
  stop_bench_broker() { broker_stop_if_started; }
fi
trap 'stop_bench_broker; cleanup' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== this machine"
echo "  $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr)"
echo "  engine: $("$bin" run --dry-run -- sh -c true | cut -d' ' -f1) $(docker version --format '{{.Client.Version}} (server {{.Server.Version}})' 2> /dev/null || true)"
echo "  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  $runs runs per variant and command, interleaved; $warmup warm-up runs each first"

for cmd in "${k_commands[@]}"; do
  for name in "${variants[@]}"; do
    for ((i = 0; i < warmup; i++)); do
      variant "$name" "$cmd" no
    done
  done
done
for ((i = 0; i < runs; i++)); do
  for cmd in "${k_commands[@]}"; do
    # Rotate the order each round so that no variant always follows the same neighbour.
    for ((j = 0; j < ${#variants[@]}; j++)); do
      variant "${variants[(i + j) % ${#variants[@]}]}" "$cmd" yes
    done
  done
done
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== latency, ms (ratio to raw docker run)"
printf '  %-16s %-6s %8s %8s %10s %10s %8s\n' command variant p50 p95 p50/raw p95/raw failed
for cmd in "${k_commands[@]}"; do
  raw50=0 raw95=0
  [[ -z ${samples[raw/$cmd]:-} ]] || read -r raw50 raw95 <<< "$(percentiles "${samples[raw/$cmd]}")"
  for name in raw seed cold warm broker; do
    if [[ -z ${samples[$name/$cmd]:-} ]]; then
      why="no run succeeded (${failures[$name/$cmd]:-0} failed)"
      [[ $name != warm || -z $warm_note ]] || why=$warm_note
      [[ $name != broker || -z $broker_note ]] || why=$broker_note
      printf '  %-16s %-6s %s\n' "$cmd" "$name" "$why"
      continue
    fi
    read -r p50 p95 <<< "$(percentiles "${samples[$name/$cmd]}")"
    printf '  %-16s %-6s %8s %8s %10s %10s %8s\n' "$cmd" "$name" "$p50" "$p95" \
      "$(ratio "$p50" "$raw50")" "$(ratio "$p95" "$raw95")" "${failures[$name/$cmd]:-0}"
  done
done

echo "== shim peak RSS (VmHWM of the sandshim process; the engine client is not counted)"
for cmd in "${k_commands[@]}"; do
  read -ra argv <<< "$cmd"
  cold=$(peak_rss_kib "$bin" run -- "${argv[@]}")
  warm=$warm_note
  if has_warm_mode; then
    warm="$(peak_rss_kib env SANDSHIM_CONFIG="$work/warm.conf" "$bin" run -- "${argv[@]}") KiB"
  fi
  printf '  %-16s cold %s KiB   warm %s\n' "$cmd" "${cold:-?}" "$warm"
done

if [[ -z $broker_note ]]; then
  echo "== broker per-run overhead, ms (request -> worker start, worker end -> client exit; sh -c true)"
  overhead_in="" overhead_out=""
  for ((i = 0; i < runs; i++)); do
    read -r a b <<< "$(broker_overhead sh -c true)"
    overhead_in+="$a " overhead_out+="$b "
  done
  read -r in50 in95 <<< "$(percentiles "$overhead_in")"
  read -r out50 out95 <<< "$(percentiles "$overhead_out")"
  printf '  request->start p50 %s p95 %s   end->exit p50 %s p95 %s\n' "$in50" "$in95" "$out50" "$out95"
  echo "== broker RSS at idle: $(awk '/VmRSS/ {print $2, $3}' "/proc/$(broker_started_pid)/status")"
fi
