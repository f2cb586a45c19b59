#!/usr/bin/env bash
# images.NAME = host: the host's own python3, node, npm, npx and core utilities run in the
# sandbox (its /usr, a curated /etc and the interpreter's prefix read-only in an empty base), with
# every hardening flag kept: nothing writable, secret or engine-side leaks in. The default images
# stay as they were (both directions), a workspace file may not choose host mode, a project that
# asks for a node or python the image lacks gets the host's (sandbox.version_fit), and a warm
# run is the same as a cold one. 45-57 s on docker at load 11-19.
# sandshim-test-engines: docker
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

D=$T/shims
SYSTEM_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"$ENGINE_CLIENT" image inspect sandshim/host:bookworm >/dev/null 2>&1 ||
    skip_or_fail "image sandshim/host:bookworm is missing (install/images.sh --only host)"
[[ -d /usr/lib/python3/dist-packages/mpmath && -x /usr/bin/npm ]] ||
    skip_or_fail "python3-mpmath or npm is missing on the host (run install/deps.sh)"
sandshim install --dir "$D" >/dev/null

HOST_MODE='[images]
python3 = host
node = host
sh = host'
host_mode() { write_user_config <<<"$HOST_MODE"; }
# Through the shims with the system's PATH after them: what an agent's command runs.
through_shims() { PATH=$D:$SYSTEM_PATH "$@"; }
native() { PATH=$SYSTEM_PATH "$@"; }

check "default mode: the images' own interpreters; a host-only module is absent"
reset_user_config
expect_exit 0 through_shims python3 -c 'import sys; print(sys.version.split()[0])'
IMAGE_PY=$(cat "$OUT")
expect_exit 0 through_shims node --version
IMAGE_NODE=$(cat "$OUT")
expect_exit 0 through_shims python3 -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("mpmath") is None else 71)'
expect_equal sandshim/python:bookworm "$(audit_field last image)" "the image of a default-mode run"

check "host mode: the host's python3, node, npm and npx versions; its modules importable"
host_mode
HOST_PY_VERSION=$(native python3 -c 'import sys; print(sys.version.split()[0])')
expect_exit 0 through_shims python3 -c 'import sys; print(sys.version.split()[0])'
expect_file_is "$OUT" "$HOST_PY_VERSION"
expect_exit 0 through_shims node --version
expect_file_is "$OUT" "$(native node --version)"
say "versions: image python $IMAGE_PY node $IMAGE_NODE; host python $HOST_PY_VERSION node $(native node --version)"
expect_exit 0 through_shims sh -c 'HOME=/tmp npm --version && HOME=/tmp npx --version'
expect_file_is "$OUT" "$(native npm --version)
$(native npx --version)"
expect_exit 72 through_shims python3 -c 'import mpmath, sys; sys.exit(72)'
expect_exit 0 through_shims sh -c 'command -v bc strings awk >/dev/null || command -v awk'
expect_equal sandshim/host:bookworm "$(audit_field last image)" "the image of a host-mode run"

check "version fit: a project asking for a node its image lacks runs the host's node, and says so"
reset_user_config
host_major=$(native node -p 'process.versions.node.split(".")[0]')
image_major=${IMAGE_NODE#v}
image_major=${image_major%%.*}
if [[ $host_major == "$image_major" ]]; then
    say "version fit not checked: the host's node and the image's are both $host_major"
else
    printf '{"name": "fit", "engines": {"node": ">=%s"}}\n' "$host_major" >"$WS/package.json"
    expect_exit 0 through_shims node -p 'process.versions.node.split(".")[0]'
    expect_file_is "$OUT" "$host_major"
    expect_contains "package.json (engines.node) asks for node \">=$host_major\"" "$ERR"
    expect_contains "this run uses the host's node, read-only in the sandbox" "$ERR"
    expect_equal sandshim/host:bookworm "$(audit_field last image)" "the image of a run whose project asks for the host's node"
    write_user_config <<<$'[sandbox]\nversion_fit = warn'
    expect_exit 0 through_shims node -p 'process.versions.node.split(".")[0]'
    expect_file_is "$OUT" "$image_major"
    expect_contains "\`images.node = host\` runs the host's node in the sandbox instead" "$ERR"
    # run/interpreter_fit.cpp's table of the images' node must be what the image runs.
    expect_contains "has node ${IMAGE_NODE#v}:" "$ERR"
    reset_user_config
    # A project that declares nothing asks what its installed dependencies ask.
    printf '{"name": "fit", "dependencies": {"needs-new": "1.0.0"}}\n' >"$WS/package.json"
    mkdir -p "$WS/node_modules/needs-new"
    printf '{"name": "needs-new", "engines": {"node": ">=%s"}}\n' "$host_major" >"$WS/node_modules/needs-new/package.json"
    expect_exit 0 through_shims node -p 'process.versions.node.split(".")[0]'
    expect_file_is "$OUT" "$host_major"
    expect_contains "node_modules/needs-new/package.json (engines.node) asks for node \">=$host_major\"" "$ERR"
    rm -r "$WS/package.json" "$WS/node_modules"
    expect_exit 0 through_shims node -p 'process.versions.node.split(".")[0]'
    expect_file_is "$OUT" "$image_major"
fi
check "version fit: a project asking for a python its image lacks is told in one line, and runs the host's"
reset_user_config
# No python the image has satisfies this; the host's runs instead (on a host whose python is the
# image's, the same version: the line is what counts, never a crash found out later).
printf '[project]\nname = "fit"\nrequires-python = ">=3.99"\n' >"$WS/pyproject.toml"
expect_exit 0 through_shims python3 -c 'import sys; print(sys.version.split()[0])'
expect_contains "pyproject.toml (requires-python) asks for python \">=3.99\" and sandshim/python:bookworm has python $IMAGE_PY: this run uses the host's python, read-only in the sandbox" "$ERR"
expect_equal sandshim/host:bookworm "$(audit_field last image)" "the image of a run whose project asks for another python"
write_user_config <<<$'[sandbox]\nversion_fit = warn'
expect_exit 0 through_shims python3 -c 'import sys; print(sys.version.split()[0])'
expect_file_is "$OUT" "$IMAGE_PY"
expect_contains "\`images.python3 = host\` runs the host's python in the sandbox instead" "$ERR"
reset_user_config
rm "$WS/pyproject.toml"
expect_exit 0 through_shims python3 -c 'import sys; print(sys.version.split()[0])'
expect_file_is "$OUT" "$IMAGE_PY"
expect_not_contains "asks for python" "$ERR"
host_mode # the checks below are host mode's

check "host mode: nothing writable, secret or engine-side leaked in"
expect_exit 73 through_shims sh -c '
    for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/ssl/private; do
        [ ! -e "$f" ] || { echo "present: $f"; exit 1; }
    done
    [ ! -e /run ] || { echo "present: /run"; exit 2; }
    for s in /var/run/docker.sock /run/docker.sock /run/podman/podman.sock; do
        [ ! -e "$s" ] || { echo "present: $s"; exit 3; }
    done
    touch /usr/sandshim-probe 2>/dev/null && { echo "/usr is writable"; exit 4; }
    touch /etc/passwd 2>/dev/null && { echo "/etc/passwd is writable"; exit 5; }
    touch ./probe 2>/dev/null && { echo "the workspace is writable"; exit 6; }
    [ "$(ls /sys/class/net)" = lo ] || { echo "network: $(ls /sys/class/net)"; exit 7; }
    grep -q "^NoNewPrivs:[[:space:]]*1" /proc/self/status || exit 8
    grep -q "^CapEff:[[:space:]]*0*$" /proc/self/status || exit 9
    [ "$(id -u)" != 0 ] || exit 10
    exit 73'
# setuid binaries of the host's /usr run, but no-new-privileges keeps them at the caller's uid.
expect_exit 74 through_shims sh -c 'su -c true root </dev/null >/dev/null 2>&1 || exit 74'
expect_exit 0 through_shims python3 -c 'import socket; s = socket.socket(); s.settimeout(2)
try:
    s.connect(("127.0.0.1", 9)); raise SystemExit(1)
except OSError:
    pass'

check "host mode, the other direction: the same probes pass on the host"
[[ -e /etc/shadow && -e /run ]] || fail "the host has no /etc/shadow or /run: the probes above prove nothing"

check "an interpreter outside /usr brings its installation prefix, read-only, first on PATH"
PREFIX=$T/opt/node-host
mkdir -p "$PREFIX/bin"
cp /usr/bin/node "$PREFIX/bin/node"
chmod -R a+rX "$T/opt"
expect_exit 0 env PATH="$D:$PREFIX/bin:$SYSTEM_PATH" node -e 'console.log(process.execPath)'
expect_file_is "$OUT" "$PREFIX/bin/node"
expect_exit 75 env PATH="$D:$PREFIX/bin:$SYSTEM_PATH" node -e 'try {
    require("fs").writeFileSync(require("path").dirname(process.execPath) + "/x", "");
} catch (e) { process.exit(e.code === "EROFS" ? 75 : 1); }'

check "host mode without a host interpreter: refused with one line, nothing runs"
expect_exit 125 env PATH="$D:$SYSTEM_PATH" "$SANDSHIM_BIN" run --image host -- no-such-interpreter-x
expect_contains "images.no-such-interpreter-x = host: no no-such-interpreter-x on PATH after the shim directory" "$ERR"

check "a workspace file may not choose host mode"
printf '[images]\npython3 = host\n' >"$WS/.sandshim.conf"
reset_user_config
rc=0
through_shims python3 -c 'print(1)' >"$T/ws.out" 2>&1 || rc=$?
[[ $rc != 0 ]] || fail "a workspace .sandshim.conf chose host mode and the run went on"
expect_contains "images.python3" "$T/ws.out"
rm -f "$WS/.sandshim.conf"

check "host mode, warm: a pooled run has the host's version too"
write_user_config <<<"$HOST_MODE
[pool]
size = 1
start = launcher"
PATH=$D:$SYSTEM_PATH "$SANDSHIM_BIN" pool fill python3 >/dev/null || fail "pool fill python3 in host mode failed"
expect_exit 0 through_shims python3 -c 'import sys; print(sys.version.split()[0])'
expect_file_is "$OUT" "$HOST_PY_VERSION"
expect_equal true "$(audit_field last warm)" "the warm run's warm field"
"$SANDSHIM_BIN" pool drain >/dev/null 2>&1 || true
reset_user_config

check "default mode again: the image's interpreter"
expect_exit 0 through_shims python3 -c 'import sys; print(sys.version.split()[0])'
expect_file_is "$OUT" "$IMAGE_PY"

check "audit verify is ok"
expect_exit 0 sandshim audit verify
suite_done
