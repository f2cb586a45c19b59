#!/usr/bin/env bash
# The README's first command: sets this machine up to run python, node and sh through sandshim.
# Installs the packages, starts the Docker engine when none answers (and leaves it running: this is
# machine set-up, not a test run), builds the images and the binary, installs the shims for the
# invoking user, starts the broker (install/broker_setup.sh: the system user `sandshim`, its socket
# in /run/sandshim; SANDSHIM_SETUP_BROKER=0 skips it), then shows what a sandboxed python and node
# see. Re-running it is cheap.
# Run it as the user who will use the shims; it asks sudo for the steps that need root.
set -euo pipefail

SANDSHIM_PREFIX=sandshim-setup
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/engine.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"

readonly k_build_dir=build
# Same type as install/test.sh, so the two share build/ without a full rebuild each time; and GCC 12
# at -O3 (Release) raises a false -Wrestrict in libstdc++ that -Werror turns into a failed build.
readonly k_build_type=RelWithDebInfo
readonly k_bin=build/sandshim
readonly k_demo_timeout=120 # seconds for one sandboxed demo run, image start included

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
    say "building $k_bin ($k_build_type)"
    cmake -S . -B "$k_build_dir" -DCMAKE_BUILD_TYPE="$k_build_type" >&2 || die "cmake configure failed (see above)"
    cmake --build "$k_build_dir" -j"$(nproc)" >&2 || die "build failed (see above)"
    [[ -x $k_bin ]] || die "the build did not produce $k_bin"
}

install_shims() {
    say "installing the shims: $k_bin install"
    "$k_bin" install >&2 || die "'$k_bin install' failed (see above)"
}

# Puts the shim directory first on PATH, as `sandshim env` tells a shell to.
use_shim_path() {
    local line
    line=$("$k_bin" env 2>/dev/null) || line=""
    if [[ -n $line ]]; then
        eval "$line" # printed by the binary we just built, for exactly this use
    else
        PATH="${XDG_DATA_HOME:-$HOME/.local/share}/sandshim/bin:$PATH"
    fi
    local tool found
    for tool in python node; do
        found=$(command -v "$tool") || die "'$tool' is not on PATH after '$k_bin env'"
        [[ $(basename "$(readlink -f "$found")") == sandshim ]] ||
            die "'$tool' resolves to $found, not to the sandshim shim; check '$k_bin install'"
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

main() {
    local started=$SECONDS
    cd "$(repo_root)"
    bash install/deps.sh
    start_engine
    bash install/images.sh
    build_binary
    install_shims
    if [[ ${SANDSHIM_SETUP_BROKER:-1} != 0 ]]; then
        bash install/broker_setup.sh "$k_bin" # SANDSHIM_SETUP_BROKER=0: direct mode only
    fi
    demo
    say "set up in $((SECONDS - started))s; to use the shims, add to your shell profile: $("$k_bin" env 2>/dev/null || echo "eval \"\$($k_bin env)\"")"
}

# Sourcing (for tests) defines the functions without running anything.
[[ ${BASH_SOURCE[0]} != "$0" ]] || main "$@"
