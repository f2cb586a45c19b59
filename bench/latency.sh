#!/usr/bin/env bash
# Start-to-exit latency of one sandboxed command, next to what it would cost without sandshim.
# For `sh -c true`, `python -c pass` and `node -e 0`, N runs of each variant, interleaved run by
# run in one session so that load from elsewhere hits every variant alike (each round runs the
# variants in a fresh random order, and each sample's background work, a warm pool's refill or
# the removal of a container the run returned before, ends before the next sample starts):
#   raw    the engine client alone, with exactly the flags `sandshim run --dry-run` prints
#   seed   the same flags through `timeout 30s docker run …` in a bash script (the naive wrapper)
#   cold   `sandshim run -- CMD`
#   api-floor  the engine's own cold floor: sandshim's API client (create, attach, wait, start)
#          for the same container, started by bench/sandshim_api_floor, which does nothing else
#          (no policy, audit, guardian or event watch); its ratio to raw is the best any client
#          of these calls can reach, and cold - api-floor is all that sandshim adds around them
#   warm-exec      `sandshim run -- CMD` with `pool.size` set and `pool.start = exec` (docker exec)
#   warm-launcher  the same with `pool.start = launcher`: sandshim's launcher in the container
#                  starts the command (when this build has one)
#   floor  the same command started by a process already inside a running container of the image
#          (bench/spawn_timer, mounted in; its own wall time of fork, exec and wait)
#   broker `sandshim run -- CMD` as a thin client of a broker with the installed default's policy
#          (install/lib/broker.sh: broker.mode = required, a warm pool of one started through the
#          launcher; a private broker as root, with the system user `sandshim`, its socket and
#          launch directory on /dev/shm's tmpfs as the installed one's are on /run's; INSTALLED=1
#          times the installed broker itself, at $SANDSHIM_BROKER_SOCKET or /run/sandshim;
#          BROKER=0 leaves it out; BROKER_ENGINE_API=on or off gives the private broker's system
#          file that engine.api, else the default's; BROKER_POOL adds lines to its [pool], such as
#          BROKER_POOL=$'max = 0\nclaim_wait = 0' for the pool that never grows, the control of
#          pool growth). Each sample waits, untimed, for the
#          broker's refill; then a burst of BURST (50) back-to-back python calls, not waiting,
#          counts from the audit how many a warm container served
#   bwrap  the same command under bubblewrap (the host's interpreter; read-only /usr and /etc,
#          every namespace unshared, no capabilities): what a process-level sandbox costs
# Prints p50/p95, each variant's ratio to raw and its CPU p50 (user + system of the process and
# the children it waited for; with the spawn timer), the same ratios paired by round (the median
# of each round's own ratio, and of launcher - floor), the shim's own peak RSS, the broker's per-run
# overhead (client's request to the worker's start, plus the worker's end to the client's exit,
# from their SANDSHIM_LOG=debug timestamps) and the broker's RSS at idle. Asserts nothing.
#
#   bench/latency.sh [BUILD_DIR]            (default: build)
#   N=30 POOL_SIZE=2 SANDSHIM_BIN=build/sandshim bench/latency.sh
#   OUTPUT=null bench/latency.sh   (every variant's output to /dev/null; the default, pipe, reads
#                                   it through a pipe to its end, as an agent's tool does)
#   VARIANTS="floor broker" N=10 bench/latency.sh   (only those variants: the broker's targets
#                                                  and its burst, in a few minutes)
#
# Everything runs as the caller against the engine sandshim finds, with HOME, XDG dirs, config
# and the audit database in a fresh directory; containers have no network (sandshim's default).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/rounds.sh
. "$here/lib/rounds.sh"
build=$(realpath -m "${1:-build}")
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
runs=${N:-30}
pool_size=${POOL_SIZE:-2}
warmup=${WARMUP:-2}
# pipe: the spawn timer reads every variant's output through a pipe to its end, as an agent's
# tool does (a run is over for it when the last holder of its output lets go); null: /dev/null.
output=${OUTPUT:-pipe}
case $output in
  pipe) timer_output=(--pipe) ;;
  null) timer_output=() ;;
  *)
    echo "latency.sh: OUTPUT is pipe or null, not '$output'" >&2
    exit 2
    ;;
esac
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
  if [[ -f $work/launcher.conf ]] && has_launcher; then
    SANDSHIM_CONFIG="$work/launcher.conf" "$bin" pool drain > /dev/null 2>&1 || true
  fi
  stop_floor_containers
  chattr -a "$work/anchors/anchor.log" 2> /dev/null || true # the private broker's, append-only
  rm -rf "$work" "$broker_run_dir"
}
trap cleanup EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache SANDSHIM_AUDIT_DB=$work/audit.db
unset SANDSHIM_CONFIG SANDSHIM_DRY_RUN SANDSHIM_LOG DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$work/workspace"
chmod 755 "$work/workspace"
cd "$work/workspace"
printf '[pool]\nsize = %s\nstart = exec\n' "$pool_size" > "$work/warm.conf"
printf '[pool]\nsize = %s\nstart = launcher\n' "$pool_size" > "$work/launcher.conf"

# The seed's wrapper: a bash script around `timeout 30s docker run`.
cat > "$work/seed.sh" << 'EOF'
#!/usr/bin/env bash
timeout 30s "$@"
EOF
chmod 755 "$work/seed.sh"

has_warm_mode() {
  "$bin" policy show 2> /dev/null | grep -q 'pool\.size'
}

has_launcher() {
  "$bin" policy show 2> /dev/null | grep -q 'pool\.start'
}

# The floor: per image, one running container with sandshim's flags and the spawn timer mounted,
# in which the timer starts the command itself; the sample is the timer's own wall time.
# The bench programs of BUILD_DIR, else of the tree SANDSHIM_BIN was built in (an installed binary
# has none beside it).
bench_program() { # NAME
  if [[ -x $build/bench/$1 ]]; then
    realpath "$build/bench/$1"
  else
    printf '%s\n' "$(dirname "$bin")/bench/$1"
  fi
}
timer=$(bench_program sandshim_spawn_timer)
declare -A floor_container=() floor_program=()
# Without sandshim's labels: its run deadline (30 s) would let any `sandshim gc` on the machine
# remove the container mid-bench.
start_floor_container() { # CMD...
  local key="$*" image_at name arg
  local -a flags=()
  engine_line "$@"
  # The image is the first word after the client and its verb that is not an option (every
  # option is one --name=value word); the workspace gate's arguments may follow it.
  for ((image_at = 2; image_at < ${#engine_args[@]}; image_at++)); do
    [[ ${engine_args[image_at]} == -* ]] || break
  done
  for arg in "${engine_args[@]:0:image_at}"; do
    # Without the gate as entrypoint: the timer's container runs `sleep`, not a run's command.
    [[ $arg == --label=org.sandshim.* || $arg == --entrypoint=* ]] || flags+=("$arg")
  done
  name=sandshim-bench-floor-$$-${#floor_container[@]}
  "${flags[@]}" --detach "--name=$name" \
    "--mount=type=bind,source=$timer,target=/.spawn_timer,readonly" \
    "${engine_args[image_at]}" sleep 3600 > /dev/null
  floor_container[$key]=$name
  floor_program[$key]=$(docker exec "$name" sh -c "command -v $1")
}
stop_floor_containers() {
  local name
  for name in "${floor_container[@]}"; do
    docker rm --force "$name" > /dev/null 2>&1 || true
  done
}
# One sample of KEY: into its list, and with the round it came from, for the paired figures.
declare -A samples failures cpu_samples paired
round=0
record_sample() { # KEY MS
  samples[$1]+="$2 "
  [[ $1 == warmup ]] || paired[$1]+="$round:$2 "
}
floor_ms() { # KEY CMD...
  local key=$1 out
  shift
  if ! out=$(docker exec "${floor_container[$*]}" /.spawn_timer "${timer_output[@]}" 1 /dev/null \
    "${floor_program[$*]}" "${@:2}" 2> "$work/last.err"); then
    failures[$key]=$((${failures[$key]:-0} + 1))
    return 0
  fi
  record_sample "$key" "${out%% *}"
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
# With the spawn timer, every variant is timed as the floor is (fork, exec and wait by a small
# C program, whose CPU figure is kept too); a leading `env NAME=VALUE...` is applied to the
# timer, so neither a shell's fork nor env's exec is in the sample. Else bash times it.
time_ms() {
  local key=$1 start end status=0 out
  shift
  if [[ -x $timer ]]; then
    local -a assignments=()
    if [[ $1 == env ]]; then
      shift
      while [[ $1 == *=* ]]; do
        assignments+=("$1")
        shift
      done
    fi
    if ! out=$(env "${assignments[@]}" "$timer" "${timer_output[@]}" 1 /dev/null "$@" \
      2> "$work/last.err"); then
      failures[$key]=$((${failures[$key]:-0} + 1))
      echo "latency.sh: $key failed: $(head -c 300 "$work/last.err")" >&2
      return 0
    fi
    record_sample "$key" "${out%% *}"
    cpu_samples[$key]+="${out##* } "
    return 0
  fi
  start=$EPOCHREALTIME
  "$@" < /dev/null > /dev/null 2> "$work/last.err" || status=$?
  end=$EPOCHREALTIME
  if ((status != 0)); then
    failures[$key]=$((${failures[$key]:-0} + 1))
    echo "latency.sh: $key exited $status: $(head -c 300 "$work/last.err")" >&2
    return 0
  fi
  record_sample "$key" "$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", (e - s) * 1000 }')"
}

# Waits, untimed, until the refill a warm run started is done (`pool fill` takes the pool's lock,
# which the refill holds): no variant runs beside another's background refill.
settle_pool() { # CONFIG COMMAND
  SANDSHIM_CONFIG=$1 "$bin" pool fill "$2" < /dev/null > /dev/null 2>&1 || true
}

variant() {
  local name=$1 cmd=$2 record=$3 before
  local -a argv
  read -ra argv <<< "$cmd"
  local key=$name/$cmd
  [[ $record == yes ]] || key=warmup
  # A warm variant's pool is full before the count, so its refill adds back only what it took.
  case $name in
    warm-exec) settle_pool "$work/warm.conf" "${argv[0]}" ;;
    warm-launcher) settle_pool "$work/launcher.conf" "${argv[0]}" ;;
  esac
  before=$(run_container_count "$engine_client")
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
    api-floor)
      "$api_floor" --prepare "$work/floor-create.json" -- "${argv[@]}"
      time_ms "$key" "$api_floor" "$engine_socket" "$work/floor-create.json"
      ;;
    warm-exec)
      time_ms "$key" env SANDSHIM_CONFIG="$work/warm.conf" "$bin" run -- "${argv[@]}"
      settle_pool "$work/warm.conf" "${argv[0]}"
      ;;
    warm-launcher)
      time_ms "$key" env SANDSHIM_CONFIG="$work/launcher.conf" "$bin" run -- "${argv[@]}"
      settle_pool "$work/launcher.conf" "${argv[0]}"
      ;;
    floor) floor_ms "$key" "${argv[@]}" ;;
    broker)
      local warm
      warm=$(broker_warm_count)
      time_ms "$key" "${broker_client[@]}" "$bin" run -- "${argv[@]}"
      settle_broker_pool "$warm"
      ;;
    bwrap)
      bwrap_line "${argv[@]}"
      time_ms "$key" "${bwrap_argv[@]}"
      ;;
  esac
  settle_run_containers "$engine_client" "$before"
}

# The broker the `broker` variant times: the installed one (INSTALLED=1), else a private one as
# the system user `sandshim` with the installed default's policy, its socket on /dev/shm.
broker_client=()
broker_kind=""
broker_pool_owner="" # the org.sandshim.pool.owner label of the broker's warm containers
broker_pool_dir=""   # the broker's pool directory (pool/pool.cpp's pool_dir)
broker_run_dir=""
# shellcheck source=../install/lib/broker.sh
. "$here/../install/lib/broker.sh"
start_bench_broker() {
  [[ ${BROKER:-1} != 0 ]] || return 1
  if [[ ${INSTALLED:-0} == 1 ]]; then
    use_installed_broker
    return
  fi
  [[ $(id -u) == 0 ]] || return 1
  # A system file that requires its broker sends every client there, whatever the socket
  # variable says: the private broker would not be the one timed.
  if "$bin" policy show 2> /dev/null | grep -Eq '^broker\.mode +=  *required'; then
    broker_note="n/a (the system file requires its own broker, which every client reaches: INSTALLED=1 times it)"
    return 1
  fi
  broker_ensure_user > /dev/null 2>&1 || return 1
  install -m 755 "$bin" "$work/sandshim"
  broker_install_companions "$bin" "$work" || return 1
  # The broker's own policy file (root's), never /etc/sandshim/config: its own keyed database and
  # anchor log, as the installed broker has (an anchor log belongs to one chain), and its worker's
  # engine.api when BROKER_ENGINE_API names one.
  local engine=""
  [[ -z ${BROKER_ENGINE_API:-} ]] || engine=$(printf '[engine]\napi = %s\n' "$BROKER_ENGINE_API")
  [[ -z ${BROKER_POOL:-} ]] || engine+=$(printf '\n[pool]\n%s\n' "$BROKER_POOL")
  broker_write_system_config "$work/etc/config" "$work/broker" "$work/anchors" \
    "$k_broker_default_policy$engine"
  broker_run_dir=$(mktemp -d /dev/shm/sandshim-bench.XXXXXX) # the launcher's sockets need a tmpfs
  broker_start "$work/sandshim" "$broker_run_dir/broker.sock" "$work/broker" \
    --system-config "$work/etc/config" --max-runs-per-user 64 || return 1
  broker_client=(env SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$broker_run_dir/broker.sock")
  broker_pool_owner=$(pool_owner_label "$work/broker/state" "$(id -u "$k_broker_user")")
  broker_pool_dir=$work/broker/state/sandshim/pool
  broker_kind="a private broker with the installed default's policy ($k_broker_user, pool.size = 1, launcher)"
}
use_installed_broker() {
  local socket=${SANDSHIM_BROKER_SOCKET:-$k_broker_socket_dir/broker.sock}
  if [[ ! -S $socket ]]; then
    broker_note="n/a (INSTALLED=1, but no broker listens at $socket: run install/setup.sh)"
    return 1
  fi
  broker_client=(env SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$socket")
  broker_pool_owner=$(pool_owner_label "$k_broker_home/state" "$(id -u "$k_broker_user")")
  broker_pool_dir=$k_broker_home/state/sandshim/pool
  broker_kind="the installed broker at $socket"
}
# pool/pool.cpp's owner_label: the pool directory under the broker's XDG_STATE_HOME, and its uid.
pool_owner_label() { # XDG_STATE_HOME UID
  printf '%s' "$1/sandshim/pool:$2" | sha256sum | cut -c1-16
}
# The broker's ready warm containers: its pool's idle entries, each published once the
# container's launcher listens (a container the engine lists may still be starting, and a sample
# that found it so would time the refill, not the run).
# (find fails on a directory not made yet, or one removed while it reads: then it counts what it saw.)
broker_warm_count() {
  { find "$broker_pool_dir" -mindepth 2 -maxdepth 2 -type f -regex '.*/[0-9a-f]+$' \
    -not -path '*/claimed/*' 2> /dev/null || :; } | wc -l
}
# Waits, untimed and for 10 s at most, until the broker's pool holds COUNT warm containers again.
settle_broker_pool() { # COUNT
  local i
  for ((i = 0; i < 200; i++)); do
    (($(broker_warm_count) >= $1)) && return 0
    sleep 0.05
  done
}

# The same command under bubblewrap: the host's interpreter in /usr (python3 where it has no
# `python`), read-only /usr and /etc, the workspace read-only, every namespace unshared.
bwrap_argv=()
bwrap_line() { # CMD...
  local program=$1
  [[ $program != python || -x /usr/bin/python ]] || program=python3
  bwrap_argv=("$(command -v bwrap)" --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
    --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --ro-bind /etc /etc --proc /proc
    --dev /dev --tmpfs /tmp --ro-bind "$work/workspace" "$work/workspace"
    --chdir "$work/workspace" --unshare-all --die-with-parent --new-session --cap-drop ALL
    "$program" "${@:2}")
}

# Milliseconds the broker adds to one run: from the client's request to the worker's start, and
# from the run's outcome (its row complete; the worker's end for a broker without the mark) to
# the client's exit (both on CLOCK_MONOTONIC, logged at debug).
broker_overhead() {
  SANDSHIM_LOG=debug "${broker_client[@]}" "$bin" run -- "$@" < /dev/null 2>&1 > /dev/null |
    awk '/broker: request sent at/ { s = $NF } /broker: worker started at/ { w = $NF }
         /broker: worker ended at/ { e = $NF } /broker: exit received at/ { x = $NF }
         /broker: outcome told at/ { t = $NF }
         END { if (t) e = t; if (s && w && e && x) printf "%.3f %.3f\n", w - s, x - e }'
}

# The broker's memory at idle: the daemon's RSS, and the PSS of it with its idle children (the
# audit keeper, the spare session and its worker), whose pages they mostly share.
broker_idle_memory() {
  local daemon pids pid pss=0
  daemon=$(broker_started_pid)
  # (The installed broker is not this shell's: the oldest process of its user that serves.)
  [[ -n $daemon ]] || daemon=$(pgrep -o -u "$k_broker_user" -f ' broker --socket ' || :)
  if [[ -z $daemon ]]; then
    echo "== broker memory at idle: n/a (no daemon found)"
    return
  fi
  # (pgrep finds no child of a process that has none: the audit keeper, an idle session.)
  pids="$daemon $(pgrep -P "$daemon" | tr '\n' ' ' || :)"
  for pid in $(pgrep -P "$daemon" || :); do pids+=" $(pgrep -P "$pid" | tr '\n' ' ' || :)"; done
  for pid in $pids; do
    pss=$((pss + $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2> /dev/null || echo 0)))
  done
  echo "== broker memory at idle: daemon RSS $(awk '/VmRSS/ {print $2, $3}' "/proc/$daemon/status");" \
    "$(wc -w <<< "$pids") processes (daemon, audit keeper, spare session and worker) PSS $pss kB"
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

# The engine's client, as sandshim runs it: the settling counts containers through it.
engine_client=$("$bin" run --dry-run -- sh -c true | cut -d' ' -f1)
variants=(raw seed cold)
api_floor=$(bench_program sandshim_api_floor)
engine_socket=/var/run/docker.sock # DOCKER_HOST is unset above: sandshim's default socket
api_floor_note="n/a (build the sandshim_api_floor target; a local docker socket)"
if [[ -x $api_floor && -S $engine_socket ]] && "$bin" policy show 2> /dev/null | grep -q 'engine\.api *= *on'; then
  variants+=(api-floor)
  api_floor_note=""
fi
warm_note=""
if has_warm_mode; then
  variants+=(warm-exec)
else
  warm_note="n/a (no warm mode in this build)"
fi
launcher_note=""
if has_launcher; then
  variants+=(warm-launcher)
else
  launcher_note="n/a (no launcher in this build)"
fi
floor_note=""
if [[ -x $timer ]]; then
  for cmd in "${k_commands[@]}"; do
    read -ra argv <<< "$cmd"
    start_floor_container "${argv[@]}"
  done
  variants+=(floor)
else
  floor_note="n/a (build the sandshim_spawn_timer target)"
fi
broker_note="n/a (needs root and the system user sandshim; BROKER=0 skips it)"
stop_bench_broker() { :; }
if start_bench_broker; then
  variants+=(broker)
  broker_note=""
  stop_bench_broker() {
    "${broker_client[@]}" "$bin" pool drain > /dev/null 2>&1 || true
    broker_stop_if_started
    # The drain above empties the caller's pools; the private broker's warm containers belong to
    # its own user's pool: removed by their owner label (an installed broker keeps its own).
    if [[ ${INSTALLED:-0} != 1 ]]; then
      docker ps -q --filter "label=org.sandshim.pool.owner=$broker_pool_owner" |
        xargs -r docker rm -f > /dev/null 2>&1 || true
    fi
  }
fi
bwrap_note="n/a (bubblewrap is not installed: install/deps.sh)"
if command -v bwrap > /dev/null && bwrap --ro-bind / / true 2> /dev/null; then
  variants+=(bwrap)
  bwrap_note=""
fi
trap 'stop_bench_broker; cleanup' EXIT
if [[ -n ${VARIANTS:-} ]]; then # a subset, in the order above
  kept=()
  for name in "${variants[@]}"; do
    [[ " $VARIANTS " != *" $name "* ]] || kept+=("$name")
  done
  variants=("${kept[@]}")
fi
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== this machine"
echo "  $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr)"
echo "  engine: $engine_client $(docker version --format '{{.Client.Version}} (server {{.Server.Version}})' 2> /dev/null || true)"
echo "  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  $runs runs per variant and command, interleaved; $warmup warm-up runs each first"
echo "  order random per round (SEED=$bench_seed); each sample starts once the last one's containers are gone"
if [[ -x $timer ]]; then
  echo "  every variant timed by bench/spawn_timer (fork, exec, wait; no shell, no env in the sample);" \
    "output to $([[ $output == pipe ]] && echo "a pipe read to its end, as an agent's tool reads it" || echo /dev/null) (OUTPUT=$output)"
else
  echo "  timed by bash (\$EPOCHREALTIME around a fork and exec); build sandshim_spawn_timer for the floor's method"
fi

for cmd in "${k_commands[@]}"; do
  for name in "${variants[@]}"; do
    for ((i = 0; i < warmup; i++)); do
      variant "$name" "$cmd" no
    done
  done
done
if [[ -z $broker_note ]] && (($(broker_warm_count) == 0)); then
  echo "  warning: no idle entry in the broker's pool directory $broker_pool_dir (pool/pool.cpp's" \
    "pool_dir and this one differ?): its samples are not settled" >&2
fi
for ((i = 0; i < runs; i++)); do
  round=$i
  for cmd in "${k_commands[@]}"; do
    for j in $(round_order ${#variants[@]}); do
      variant "${variants[j]}" "$cmd" yes
    done
  done
done
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== latency, ms (ratio to raw docker run)"
printf '  %-16s %-13s %8s %8s %10s %10s %8s %8s\n' command variant p50 p95 p50/raw p95/raw failed cpu-p50
for cmd in "${k_commands[@]}"; do
  raw50=0 raw95=0
  [[ -z ${samples[raw/$cmd]:-} ]] || read -r raw50 raw95 <<< "$(percentiles "${samples[raw/$cmd]}")"
  for name in raw seed cold api-floor warm-exec warm-launcher floor broker bwrap; do
    if [[ -z ${samples[$name/$cmd]:-} ]]; then
      why="no run succeeded (${failures[$name/$cmd]:-0} failed)"
      [[ $name != warm-exec || -z $warm_note ]] || why=$warm_note
      [[ $name != warm-launcher || -z $launcher_note ]] || why=$launcher_note
      [[ $name != floor || -z $floor_note ]] || why=$floor_note
      [[ $name != api-floor || -z $api_floor_note ]] || why=$api_floor_note
      [[ $name != broker || -z $broker_note ]] || why=$broker_note
      [[ $name != bwrap || -z $bwrap_note ]] || why=$bwrap_note
      printf '  %-16s %-13s %s\n' "$cmd" "$name" "$why"
      continue
    fi
    read -r p50 p95 <<< "$(percentiles "${samples[$name/$cmd]}")"
    cpu50=-
    [[ -z ${cpu_samples[$name/$cmd]:-} ]] || read -r cpu50 _ <<< "$(percentiles "${cpu_samples[$name/$cmd]}")"
    printf '  %-16s %-13s %8s %8s %10s %10s %8s %8s\n' "$cmd" "$name" "$p50" "$p95" \
      "$(ratio "$p50" "$raw50")" "$(ratio "$p95" "$raw95")" "${failures[$name/$cmd]:-0}" "$cpu50"
  done
done

# The median over rounds of A's sample against B's from the same round (ratio, or A - B in ms):
# the machine's speed drifts over minutes, and a pair measured seconds apart shares the drift.
paired_median() { # MODE KEY_A KEY_B
  awk -v mode="$1" -v a="${paired[$2]:-}" -v b="${paired[$3]:-}" 'BEGIN {
    nb = split(b, bs, " "); for (i = 1; i <= nb; i++) { split(bs[i], kv, ":"); base[kv[1]] = kv[2] }
    na = split(a, as, " "); n = 0
    for (i = 1; i <= na; i++) {
      split(as[i], kv, ":")
      if (!(kv[1] in base) || base[kv[1]] <= 0) continue
      v[++n] = mode == "ratio" ? kv[2] / base[kv[1]] : kv[2] - base[kv[1]]
    }
    if (n == 0) { printf "n/a"; exit }
    for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    printf(mode == "ratio" ? "%.2fx" : "%+.1f ms", m) }'
}

echo "== paired by round (median over rounds of each round's own ratio to raw; launcher - floor;"
echo "   cold - api-floor: what sandshim adds around the engine's calls)"
printf '  %-16s %8s %8s %9s %8s %10s %14s %14s\n' command seed cold api-floor broker launcher \
  launcher-floor cold-apifloor
for cmd in "${k_commands[@]}"; do
  printf '  %-16s %8s %8s %9s %8s %10s %14s %14s\n' "$cmd" "$(paired_median ratio "seed/$cmd" "raw/$cmd")" \
    "$(paired_median ratio "cold/$cmd" "raw/$cmd")" "$(paired_median ratio "api-floor/$cmd" "raw/$cmd")" \
    "$(paired_median ratio "broker/$cmd" "raw/$cmd")" \
    "$(paired_median ratio "warm-launcher/$cmd" "raw/$cmd")" \
    "$(paired_median diff "warm-launcher/$cmd" "floor/$cmd")" \
    "$(paired_median diff "cold/$cmd" "api-floor/$cmd")"
done

echo "== shim peak RSS (VmHWM of the sandshim process; the engine client is not counted)"
# Where the system file requires its broker, every run is the broker's and sandshim is its
# client: one figure, the client's (a user file asking for a pool of its own would be refused).
requires_broker=0
"$bin" policy show 2> /dev/null | grep -Eq '^broker\.mode +=  *required' && requires_broker=1
for cmd in "${k_commands[@]}"; do
  read -ra argv <<< "$cmd"
  cold=$(peak_rss_kib "$bin" run -- "${argv[@]}")
  warm=$warm_note
  if ((requires_broker)); then
    warm="n/a (the broker's client: the run is the broker's)"
  elif has_warm_mode; then
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
  broker_idle_memory
fi

# The installed default's target: through the broker, p50 at most the in-container floor's + 10 ms.
broker_targets() {
  local cmd b50 floor50 w50 ignored
  for cmd in "${k_commands[@]}"; do
    [[ -n ${samples[broker/$cmd]:-} && -n ${samples[floor/$cmd]:-} ]] || continue
    read -r b50 ignored <<< "$(percentiles "${samples[broker/$cmd]}")"
    read -r floor50 ignored <<< "$(percentiles "${samples[floor/$cmd]}")"
    w50=""
    [[ -z ${samples[bwrap/$cmd]:-} ]] || read -r w50 ignored <<< "$(percentiles "${samples[bwrap/$cmd]}")"
    awk -v c="$cmd" -v b="$b50" -v f="$floor50" -v w="$w50" 'BEGIN {
      printf "  %-16s broker p50 %.1f ms - floor %.1f ms = %.1f ms (target <= 10 ms: %s)%s\n", c, b, f,
        b - f, (b - f <= 10 ? "met" : "missed"), (w == "" ? "" : sprintf("; bwrap p50 %.1f ms", w)) }'
  done
}

# BURST (50) python calls through the broker back to back, nothing waited for between them: how
# many a warm container served (the audit's `warm`, the caller's own rows through the broker),
# and their p50. Target: >= 95 %.
burst_warm_share() {
  local n=${BURST:-50} i times="" start end warm p50 ignored
  for ((i = 0; i < n; i++)); do
    start=$EPOCHREALTIME
    "${broker_client[@]}" "$bin" run -- python -c pass < /dev/null > /dev/null 2>&1 || true
    end=$EPOCHREALTIME
    times+="$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", (e - s) * 1000 }') "
  done
  warm=$("${broker_client[@]}" "$bin" audit list --limit "$n" --json |
    jq '[.[] | select(.warm == true)] | length')
  read -r p50 ignored <<< "$(percentiles "$times")"
  awk -v n="$n" -v w="$warm" -v p="$p50" 'BEGIN {
    printf "  burst of %d python calls back to back: %d warm (%.0f %%, target >= 95 %%: %s), p50 %.1f ms\n",
      n, w, 100 * w / n, (w * 100 >= 95 * n ? "met" : "missed"), p }'
}

# The launcher's targets: p50 at most the floor's + 15 ms and 0.10x raw's.
launcher_targets() {
  local cmd raw50 floor50 l50 ignored
  echo "== warm-launcher targets (p50 <= floor + 15 ms, <= 0.10x raw)"
  for cmd in "${k_commands[@]}"; do
    [[ -n ${samples[warm-launcher/$cmd]:-} && -n ${samples[floor/$cmd]:-} && -n ${samples[raw/$cmd]:-} ]] || continue
    read -r l50 ignored <<< "$(percentiles "${samples[warm-launcher/$cmd]}")"
    read -r floor50 ignored <<< "$(percentiles "${samples[floor/$cmd]}")"
    read -r raw50 ignored <<< "$(percentiles "${samples[raw/$cmd]}")"
    awk -v c="$cmd" -v l="$l50" -v f="$floor50" -v r="$raw50" 'BEGIN {
      printf "  %-16s launcher - floor = %.1f ms (%s), launcher / raw = %.2fx (%s)\n", c, l - f,
        (l - f <= 15 ? "met" : "missed"), l / r, (l / r <= 0.10 ? "met" : "missed") }'
  done
}

# What an idle warm container costs: its engine shim process (containerd-shim, RSS) and what its
# cgroup charges (the init, the launcher, the kernel's memory for them), over the idle
# containers the launcher pools hold after the runs; and how many fit in this machine's memory.
idle_container_cost() {
  local name pid shim cgroup_path usage shim_kib=0 cgroup_kib=0 count=0
  for name in $(docker ps --filter label=org.sandshim.pool --filter "volume=$work/workspace" --format '{{.Names}}'); do
    pid=$(docker inspect --format '{{.State.Pid}}' "$name" 2> /dev/null) || continue
    # 0 for a container that stopped meanwhile (a broker's pool expiring, a drain): none to count.
    [[ $pid =~ ^[1-9][0-9]*$ ]] || continue
    shim=$(ps -o ppid= -p "$pid" | tr -d ' ')
    [[ -n $shim ]] || continue
    cgroup_path=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ || $2 == "" { print $3; exit }' "/proc/$pid/cgroup")
    usage=$(cat "/sys/fs/cgroup/memory$cgroup_path/memory.usage_in_bytes" 2> /dev/null ||
      cat "/sys/fs/cgroup$cgroup_path/memory.current" 2> /dev/null || echo 0)
    shim_kib=$((shim_kib + $(awk '/VmRSS/ { print $2 }' "/proc/$shim/status")))
    cgroup_kib=$((cgroup_kib + usage / 1024))
    count=$((count + 1))
  done
  echo "== an idle warm container ($count measured, all images)"
  ((count > 0)) || return 0
  awk -v n="$count" -v s="$shim_kib" -v c="$cgroup_kib" -v avail="$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)" \
    -v total="$(awk '/MemTotal/ { print $2 }' /proc/meminfo)" 'BEGIN {
      per = (s + c) / n
      printf "  engine shim RSS %.1f MiB + container cgroup %.1f MiB = %.1f MiB each\n", s / n / 1024, c / n / 1024, per / 1024
      printf "  this machine (%.1f GiB, %.1f GiB available now) keeps about %d idle by memory\n", total / 1048576, avail / 1048576, avail / per }'
}

if [[ -n ${samples[floor/sh -c true]:-} ]]; then
  launcher_targets
fi
idle_container_cost
if [[ -z $broker_note ]]; then
  echo "== the installed default: $broker_kind"
  broker_targets
  burst_warm_share
fi
