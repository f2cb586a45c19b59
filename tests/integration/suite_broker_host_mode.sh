#!/usr/bin/env bash
# images.NAME = host through the broker: a user NOT in the engine's group runs the host's own
# python3 and node, and the interpreter is the one the system's PATH finds, never one the caller's
# PATH, pyenv or a .python-version names (those are the caller's to choose, and would choose what
# the broker's user mounts). The same user's own workspace file cannot choose host mode, and the
# default images stay in force where the administrator did not choose it. Needs root (users, the
# broker as `sandshim`). About 20 s.
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

suite_done
