#!/usr/bin/env bash
# The README's first command: sets this machine up to run python, node and sh through sandshim.
# Installs the packages the product needs (install/deps.sh --product), starts the Docker engine
# when none answers (and leaves it running: this is machine set-up, not a test run), builds the
# default images and the binary (Release, without the tests, in build-setup/), installs the broker
# as the only holder of the engine (install/broker_setup.sh: broker.mode = required, the warm pool
# on, a service that comes back after a reboot, the installing user out of the docker group),
# installs the shims for the invoking user, then shows what a sandboxed python and node see,
# through the installed broker. Each step prints its time, and a table of them comes last.
# Re-running it is cheap; install/uninstall.sh undoes the system changes.
# Run it as the user who will use the shims; it asks sudo for the steps that need root.
# Usage: install/setup.sh [--with-agents] [--keep-docker-group] [--remove-from-docker-group USER]...
#   SANDSHIM_SETUP_BROKER=0: no broker (direct mode: the user keeps needing the docker group).
#   SANDSHIM_SETUP_ROOT=DIR: the broker's files under DIR, not / (tests; see broker_setup.sh --root).
set -euo pipefail

SANDSHIM_PREFIX=sandshim-setup
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/engine.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"

# Its own tree, not the tests' build/: Release and without the tests (the unit tests alone are a
# 159 MB RelWithDebInfo binary), so a set-up builds only what it installs.
readonly k_build_dir=build-setup
readonly k_build_type=Release
readonly k_bin=$k_build_dir/sandshim
readonly k_demo_timeout=120 # seconds for one sandboxed demo run, image start included
readonly k_images=(python node sh) # the default images.* commands; wrap only for agents

g_with_agents=0
g_broker_args=() # for install/broker_setup.sh
g_steps=()       # "SECONDS NAME" of each finished step, for the table
g_shim_bin=""    # the binary the shims link to: the installed one when there is a broker
g_images_pid=""  # install/images.sh in the background
g_images_log=""

g_listener_pid="" # the loopback listener of the demo
g_port=""         # its port
g_workspace=""    # the demo's throwaway workspace

start_engine() {
    engine_ensure_running || die "no Docker engine (see above)"
    if engine_started_here; then
        say "dockerd started and left running (log: $(engine_log_path)); after a reboot re-run install/setup.sh"
        say "to stop it: sudo kill \"\$(cat /var/run/docker.pid)\""
    fi
}

build_binary() {
    local launcher=()
    # A compiler cache makes a re-run after a pull cheap; a fresh machine has none, and needs none.
    ! command -v ccache >/dev/null 2>&1 ||
        launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    say "building $k_bin ($k_build_type, without the tests, in $k_build_dir/)"
    cmake -S . -B "$k_build_dir" -DCMAKE_BUILD_TYPE="$k_build_type" -DSANDSHIM_BUILD_TESTS=OFF \
        "${launcher[@]}" >&2 || die "cmake configure failed (see above)"
    cmake --build "$k_build_dir" -j"$(nproc)" >&2 || die "build failed (see above)"
    [[ -x $k_bin ]] || die "the build did not produce $k_bin"
}

# The images build mostly waits on apt and dpkg inside debootstrap's root, the binary on the
# CPU: started before the build, they overlap (on a fresh 2-core machine the images take longer).
start_images() {
    local only=() name
    for name in "${k_images[@]}"; do
        only+=(--only "$name")
    done
    ((!g_with_agents)) || only+=(--only wrap) # hook.mode = wrap runs an agent's whole command in it
    g_images_log="$(state_dir)/setup-images.log"
    say "building the images in the background: install/images.sh ${only[*]} (log: $g_images_log)"
    rm -f -- "$g_images_log.seconds"
    # Its own time, written when it ends: the wait after the build is a step of its own.
    (
        started=$SECONDS
        bash install/images.sh "${only[@]}" >"$g_images_log" 2>&1 || exit
        echo "$((SECONDS - started))" >"$g_images_log.seconds"
    ) &
    g_images_pid=$!
}

wait_images() {
    local rc=0
    wait "$g_images_pid" || rc=$?
    g_images_pid=""
    if ((rc != 0)); then
        tail -n 20 "$g_images_log" >&2
        die "install/images.sh failed (exit $rc; the log's end above, all of it in $g_images_log)"
    fi
    g_steps+=("$(cat -- "$g_images_log.seconds") images (${k_images[*]}; in the background, during the build)")
}

stop_images() { [[ -z $g_images_pid ]] || kill "$g_images_pid" 2>/dev/null || true; }

install_broker() {
    bash install/broker_setup.sh "${g_broker_args[@]}" "$k_bin"
    g_shim_bin=${SANDSHIM_SETUP_ROOT:-}/usr/local/bin/sandshim
}

install_shims() {
    say "installing the shims: $g_shim_bin install"
    "$g_shim_bin" install >&2 || die "'$g_shim_bin install' failed (see above)"
}

# Puts the shim directory first on PATH, as `sandshim env` tells a shell to.
use_shim_path() {
    local line
    line=$("$g_shim_bin" env 2>/dev/null) || line=""
    if [[ -n $line ]]; then
        eval "$line" # printed by the binary we just built, for exactly this use
    else
        PATH="${XDG_DATA_HOME:-$HOME/.local/share}/sandshim/bin:$PATH"
    fi
    local tool found
    for tool in python node; do
        found=$(command -v "$tool") || die "'$tool' is not on PATH after '$g_shim_bin env'"
        [[ $(basename "$(readlink -f "$found")") == sandshim ]] ||
            die "'$tool' resolves to $found, not to the sandshim shim; check '$g_shim_bin install'"
    done
}

# A TCP listener on 127.0.0.1 only, that exits by itself after a minute, to probe the sandbox's network.
start_listener() {
    local portfile=$g_workspace.port i
    python3 - "$portfile" >/dev/null <<'PY' &
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
s.settimeout(1)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        s.accept()[0].close()
    except socket.timeout:
        pass
PY
    g_listener_pid=$!
    for ((i = 0; i < 50; i++)); do
        [[ -s $portfile ]] && break
        sleep 0.1
    done
    [[ -s $portfile ]] || die "the demo's loopback listener did not start"
    g_port=$(cat -- "$portfile")
}

stop_demo() {
    [[ -z $g_listener_pid ]] || kill "$g_listener_pid" 2>/dev/null || true
    [[ -z $g_workspace ]] || rm -rf -- "$g_workspace" "$g_workspace.port"
}

# The host's own view of the listener, so "no" inside the sandbox cannot mean "listener down".
readonly k_connect_probe='
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
    print("yes")
except OSError as e:
    print("no (%s)" % e.strerror)
'

readonly k_python_probe='
import os, socket, sys
def attempt(f):
    try:
        f()
        return "yes"
    except OSError as e:
        return "no (%s)" % (e.strerror or type(e).__name__)
def write():
    with open(".sandshim-demo", "w") as f:
        f.write("x")
    os.remove(".sandshim-demo")
def connect():
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
print("python: uid=%d hostname=%s writes-workspace=%s interfaces=%s reaches-host-127.0.0.1=%s" % (
    os.getuid(), socket.gethostname(), attempt(write),
    ",".join(sorted(os.listdir("/sys/class/net"))), attempt(connect)))
'

# shellcheck disable=SC2016 # JavaScript template literals, not shell expansions
readonly k_node_probe='
const fs = require("fs"), net = require("net"), os = require("os");
let w = "yes";
try { fs.writeFileSync(".sandshim-demo", "x"); fs.unlinkSync(".sandshim-demo"); } catch (e) { w = "no (" + e.code + ")"; }
const s = net.connect({ host: "127.0.0.1", port: Number(process.argv[1]), timeout: 2000 });
const done = (r) => { console.log(`node:   uid=${process.getuid()} hostname=${os.hostname()} writes-workspace=${w} reaches-host-127.0.0.1=${r}`); s.destroy(); };
s.on("connect", () => done("yes"));
s.on("error", (e) => done("no (" + e.code + ")"));
s.on("timeout", () => done("no (timeout)"));
'

# Shows, side by side, what the host and the sandboxed interpreters see.
demo() {
    local rc=0
    g_workspace=$(mktemp -d "${TMPDIR:-/tmp}/sandshim-demo.XXXXXX")
    chmod 755 "$g_workspace" # mktemp makes it 700; the sandbox user (nobody, for root) must read it
    on_exit stop_demo
    start_listener
    say "demo in workspace $g_workspace; a listener on host 127.0.0.1:$g_port (loopback only)"
    (
        cd "$g_workspace"
        printf 'host:   uid=%s hostname=%s (for comparison)\n' "$(id -u)" "$(hostname)"
        printf 'host:   reaches-host-127.0.0.1=%s\n' "$(python3 -c "$k_connect_probe" "$g_port")"
        use_shim_path
        timeout "$k_demo_timeout" python -c "$k_python_probe" "$g_port" || die "the sandboxed python failed (exit $?)"
        timeout "$k_demo_timeout" node -e "$k_node_probe" "$g_port" || die "the sandboxed node failed (exit $?)"
    ) || rc=$?
    return "$rc"
}

# Runs one step, timed: "NAME: 12s" after it, and a row of the final table.
step() { # NAME COMMAND...
    local name=$1 started=$SECONDS
    shift
    say "step: $name"
    "$@"
    g_steps+=("$((SECONDS - started)) $name")
    say "step: $name: $((SECONDS - started))s"
}

print_step_table() { # WALL-SECONDS
    local row
    say "steps:"
    for row in "${g_steps[@]}"; do
        printf '%s:   %6ss  %s\n' "$SANDSHIM_PREFIX" "${row%% *}" "${row#* }" >&2
    done
    printf '%s:   %6ss  %s\n' "$SANDSHIM_PREFIX" "$1" "total (wall clock)" >&2
}

usage() {
    cat >&2 <<'USAGE'
usage: install/setup.sh [--with-agents] [--keep-docker-group] [--remove-from-docker-group USER]...
  --with-agents                    also install the agent CLIs (Claude Code, Codex, Gemini CLI)
                                   and the wrap image (hook.mode = wrap)
  --keep-docker-group              leave the installing user in the docker group
  --remove-from-docker-group USER  also take USER out of the docker group (repeatable)
USAGE
}

parse_args() {
    while (($#)); do
        case $1 in
            --with-agents) g_with_agents=1 ;;
            --keep-docker-group) g_broker_args+=("$1") ;;
            --remove-from-docker-group)
                [[ -n ${2:-} ]] || die "--remove-from-docker-group takes a user name"
                g_broker_args+=("$1" "$2")
                shift
                ;;
            -h | --help) usage; exit 0 ;;
            *) usage; die "unknown option '$1'" ;;
        esac
        shift
    done
    [[ -z ${SANDSHIM_SETUP_ROOT:-} ]] || g_broker_args+=(--root "$SANDSHIM_SETUP_ROOT")
}

# Without the system file (SANDSHIM_SETUP_ROOT), the demo asks for the broker it installed.
demo_through_broker() {
    if [[ -n ${SANDSHIM_SETUP_ROOT:-} ]]; then
        export SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET=$SANDSHIM_SETUP_ROOT/run/sandshim/broker.sock
    fi
    demo
}

main() {
    local deps_args=(--product) started=$SECONDS
    parse_args "$@"
    cd "$(repo_root)"
    ((!g_with_agents)) || deps_args+=(--with-agents)
    g_shim_bin=$k_bin
    # One password prompt now, not one in the middle of the build from the images in the background.
    is_root || ! command -v sudo >/dev/null 2>&1 || sudo -v || die "sudo is needed for the packages, images and broker"
    step "packages (install/deps.sh ${deps_args[*]})" bash install/deps.sh "${deps_args[@]}"
    step "engine" start_engine
    on_exit stop_images
    start_images
    step "build ($k_build_type, no tests)" build_binary
    step "wait for the images" wait_images
    if [[ ${SANDSHIM_SETUP_BROKER:-1} != 0 ]]; then
        step "broker (install/broker_setup.sh)" install_broker
    fi
    step "shims" install_shims
    step "demo" demo_through_broker
    print_step_table "$((SECONDS - started))"
    say "to use the shims, add to your shell profile: $("$g_shim_bin" env 2>/dev/null || echo "eval \"\$($g_shim_bin env)\"")"
    [[ ${SANDSHIM_SETUP_BROKER:-1} == 0 ]] || say "install/uninstall.sh undoes the system changes (broker, system file, docker group)"
}

# Sourcing (for tests) defines the functions without running anything.
[[ ${BASH_SOURCE[0]} != "$0" ]] || main "$@"
