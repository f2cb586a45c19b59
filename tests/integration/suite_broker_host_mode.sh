#!/usr/bin/env bash
# images.NAME = host through the broker: a user NOT in the engine's group runs the host's own
# python3 and node, and the interpreter is the one the system's PATH finds, never one the caller's
# PATH, pyenv or a .python-version names (those are the caller's to choose, and would choose what
# the broker's user mounts). The same user's own workspace file cannot choose host mode, and the
# default images stay in force where the administrator did not choose it. Needs root (users, the
# broker as `sandshim`). Then the version fit through the broker: the ask read by the client, the
# choice the administrator's. About 25 s.
# sandshim-test-engines: docker
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

"$ENGINE_CLIENT" image inspect sandshim/host:bookworm >/dev/null 2>&1 ||
    skip_or_fail "image sandshim/host:bookworm is missing (install/images.sh --only host)"
[[ -x /usr/bin/python3 && -x /usr/bin/node && -d /usr/lib/python3/dist-packages/mpmath ]] ||
    skip_or_fail "python3, node or python3-mpmath is missing on the host (run install/deps.sh)"

# The administrator opens host mode for python3 and node only; sh keeps its image.
broker_suite_setup sandshim-brokerhost-nd $'[images]\npython3 = host\nnode = host\n'
# broker_lib's shims are python, node and sh; the agent's habit is python3.
ln -s "$T/bin/sandshim" "$T/shims/python3"
start_broker
mkdir -p "$U/ws" "$U/evil/bin"
# What the caller's PATH would find first: a python3 of the caller's own that only prints a marker.
printf '#!/bin/sh\necho CALLER-PYTHON\n' >"$U/evil/bin/python3"
chmod 755 "$U/evil/bin/python3"
printf 'evil\n' >"$U/ws/.python-version"
chown -R "$ND_USER:" "$U/ws" "$U/evil"
host_py=$(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])')
host_node=$(/usr/bin/node --version)

check "through the broker, host mode runs the system's python3 and node"
# Every run below must be the broker's: a python3 found on the host instead would pass the checks.
broker_runs() { # the broker's rows so far (its database exists from the first run on)
    [[ -e $BSTATE/audit.db ]] || { echo 0 && return; }
    broker_audit list --json | "$HOST_PY" -c 'import json, sys; print(len(json.load(sys.stdin)))'
}
runs_before=$(broker_runs)
expect_exit 0 as_nd "$U/ws" python3 -c 'import sys; print(sys.version.split()[0], sys.prefix)'
expect_file_is "$OUT" "$host_py /usr"
expect_exit 72 as_nd "$U/ws" python3 -c 'import mpmath, sys; sys.exit(72)'
expect_exit 0 as_nd "$U/ws" node --version
expect_file_is "$OUT" "$host_node"
expect_equal sandshim/host:bookworm "$(broker_row "$(last_broker_run)" image)" "the image of the broker's host-mode run"

runs_after=$(broker_runs)
expect_equal $((runs_before + 3)) "$runs_after" "the broker's rows after three runs"

check "the caller's PATH and .python-version do not choose the broker's interpreter"
# The control: on the caller's own PATH the marker script is what python3 means.
expect_equal CALLER-PYTHON "$(PATH="$U/evil/bin:/usr/bin:/bin" python3)" "the caller's python3, natively"
expect_exit 0 as_nd "$U/ws" env PATH="$T/shims:$U/evil/bin:/usr/bin:/bin" python3 -c 'import sys; print(sys.executable)'
expect_file_is "$OUT" "/usr/bin/python3"

check "host mode stays the administrator's: sh keeps its image, a workspace file cannot choose it"
expect_exit 0 as_nd "$U/ws" sh -c 'test ! -e /usr/bin/node && echo image-sh'
expect_file_is "$OUT" "image-sh"
expect_equal sandshim/sh:bookworm "$(broker_row "$(last_broker_run)" image)" "the image of the broker's sh run"
printf '[images]\nsh = host\n' >"$U/ws/.sandshim.conf"
chown "$ND_USER:" "$U/ws/.sandshim.conf"
expect_exit 125 as_nd "$U/ws" sh -c 'echo ran'
expect_contains "images.sh" "$ERR"
rm -f "$U/ws/.sandshim.conf"

# The broker again, with the default images: what a project asks of its node is read by the
# client, as the caller, and sent as data (the broker opens no file of the caller's).
restart_broker_with() { # SYSTEM_FILE_TAIL
    broker_stop_if_started
    broker_write_system_config "$SYSCONF" "$BSTATE" "$T/anchors" "$1"
    start_broker
}
restart_broker_with ""
mkdir -p "$U/fit"
printf '{"name": "fit", "engines": {"node": ">=19"}}\n' >"$U/fit/package.json"
# A project that declares nothing, whose installed dependency asks for node >= 19.
mkdir -p "$U/fit-dep/node_modules/needs-new"
printf '{"name": "fit-dep", "dependencies": {"needs-new": "1.0.0"}}\n' >"$U/fit-dep/package.json"
printf '{"name": "needs-new", "engines": {"node": ">=19"}}\n' >"$U/fit-dep/node_modules/needs-new/package.json"
chown -R "$ND_USER:" "$U/fit" "$U/fit-dep"
image_node=v18.20.4

check "version fit through the broker: a project (or its installed dependency) that asks for a newer node runs the host's"
expect_exit 0 as_nd "$U/ws" node --version
expect_file_is "$OUT" "$image_node"
expect_equal sandshim/node:bookworm "$(broker_row "$(last_broker_run)" image)" "the image of a run whose project asks nothing"
expect_exit 0 as_nd "$U/fit" node --version
expect_file_is "$OUT" "$host_node"
expect_contains "package.json (engines.node) asks for node \">=19\" and sandshim/node:bookworm has node 18.20.4: this run uses the host's node, read-only in the sandbox (the broker's \`sandbox.version_fit\` chose it)" "$ERR"
expect_equal sandshim/host:bookworm "$(broker_row "$(last_broker_run)" image)" "the image of the fitted run"
expect_exit 0 as_nd "$U/fit-dep" node --version
expect_file_is "$OUT" "$host_node"
expect_contains "node_modules/needs-new/package.json (engines.node) asks for node \">=19\" and sandshim/node:bookworm has node 18.20.4: this run uses the host's node" "$ERR"

check "version fit through the broker is the administrator's: warn keeps the image and says so"
restart_broker_with $'[sandbox]\nversion_fit = warn\n'
expect_exit 0 as_nd "$U/fit" node --version
expect_file_is "$OUT" "$image_node"
expect_contains "has node 18.20.4: the run may fail; \`sandbox.version_fit = host\` in the broker's $SYSCONF runs the host's node in the sandbox instead" "$ERR"
# The caller's own config cannot choose it back: version_fit is the system file's.
printf '[sandbox]\nversion_fit = host\n' >"$U/.config/sandshim/config"
chown "$ND_USER:" "$U/.config/sandshim/config"
expect_exit 125 as_nd "$U/fit" node --version
expect_contains "sandbox.version_fit" "$ERR"
rm -f "$U/.config/sandshim/config"

suite_done
