#!/usr/bin/env bash
# sandshim-test-warm: docker
# Resource caps, each with a control under a looser limit: the pids cap stops a fork bomb, the
# memory cap ends an allocation with 137, a line naming the limit, and audit status `oom`; on
# podman that kill leaves no `oom` file of conmon's in the workspace.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../../install/lib/podman_service.sh
. "$SOURCE_DIR/install/lib/podman_service.sh"

cp "$SOURCE_DIR/tests/integration/programs/forks.py" "$WS/forks.py"
cat >"$WS/alloc.py" <<'EOF'
# Allocates and touches N MiB, then exits 42.
import sys
block = b"\x01" * (int(sys.argv[1]) << 20)
sys.exit(42)
EOF

check "the pids cap (64) stops a fork bomb with EAGAIN, and the run ends"
expect_exit 42 sandshim run -- python forks.py
expect_contains EAGAIN "$ERR"
forks=$(cat "$OUT")
((forks >= 40 && forks < 64)) || fail "forked $forks children under a 64 pids cap"
((ELAPSED_MS < 20000)) || fail "the run took ${ELAPSED_MS} ms"

check "pids control: with --pids 128 the same script forks all 100 children"
expect_exit 73 sandshim run --pids 128 -- python forks.py
expect_file_is "$OUT" 100

check "the memory cap: 200 MiB under --memory 64m is killed with 137, a line naming the limit, status oom"
expect_exit 137 sandshim run --memory 64m -- python alloc.py 200
if skip_check_on podman "podman 4.3 with runc on cgroup v1 reports no OOM kill (no oom event, State.OOMKilled false), so the run is status killed without the memory line"; then
    expect_run last killed 137
else
    expect_equal "sandshim: python was killed at the memory limit of 64m (sandbox.memory)" "$(head -n 1 "$ERR")" "the outcome line"; expect_contains "sandshim: limit hit: " "$ERR"
    expect_run last oom 137
fi
expect_equal 9 "$(audit_field last signal)" "signal of the OOM-killed run"

check "podman's conmon leaves nothing in the workspace at an OOM kill: the client runs in sandshim's directory"
if skip_check_on docker "docker has no conmon writing into the client's working directory"; then :; else
    [[ ! -e $WS/oom ]] || fail "the OOM-killed run left a file in the workspace: $(ls -l "$WS/oom")"
    # Over podman's API service (when one answers) conmon is the service's child and writes there.
    if podman_service_answers "$(podman_service_default_socket)"; then
        say "podman's API service answers: the run went over it, conmon wrote in the service's directory"
    else
        [[ -e $XDG_STATE_HOME/sandshim/engine-cwd/oom ]] || fail "conmon wrote no oom file in sandshim's directory"
    fi
    # Control: the same engine command started from the workspace, as sandshim started it before.
    sandshim run --dry-run --memory 64m -- python alloc.py 200 >"$T/dry"
    "$HOST_PY" -c 'import shlex, sys; sys.stdout.write("\0".join(shlex.split(open(sys.argv[1]).read())) + "\0")' "$T/dry" >"$T/argv"
    mapfile -d '' -t argv <"$T/argv"
    EXTRA_CONTAINERS+=("$(printf '%s\n' "${argv[@]}" | sed -n 's/^--name=//p')")
    rc=0
    (cd "$WS" && timeout -k 5 120 "${argv[@]}" </dev/null >/dev/null 2>&1) || rc=$?
    expect_equal 137 "$rc" "exit code of the engine command run from the workspace"
    [[ -e $WS/oom ]] || fail "the control left no oom file in the workspace"
    rm -f "$WS/oom"
fi

check "memory control: 16 MiB under --memory 64m works"
expect_exit 42 sandshim run --memory 64m -- python alloc.py 16
expect_run last error 42

check "a SIGKILL that is not an OOM kill gives 137 without the memory line, status killed"
expect_exit 137 sandshim run --memory 64m -- python -c 'import os; os.kill(os.getpid(), 9)'
expect_not_contains "memory limit" "$ERR"
expect_run last killed 137

check "a 128 MiB stdout flood passes through whole while the shim stays small (max RSS < 48 MiB)"
flood=$((128 << 20))
if [[ -x /usr/bin/time ]]; then # GNU time (Debian package `time`) measures the shim's max RSS
    bytes=$(/usr/bin/time -f %M -o "$T/rss" "$SANDSHIM_BIN" run -- sh -c "head -c $flood /dev/zero" </dev/null | wc -c)
    rss_kib=$(tail -n 1 "$T/rss")
    say "shim max RSS while relaying $((flood >> 20)) MiB: $((rss_kib / 1024)) MiB"
    ((rss_kib < 48 * 1024)) || fail "the shim grew to $rss_kib KiB relaying $flood bytes"
else
    warn "no /usr/bin/time: the shim's memory is not measured"
    bytes=$("$SANDSHIM_BIN" run -- sh -c "head -c $flood /dev/zero" </dev/null | wc -c)
fi
expect_equal "$flood" "$bytes" "bytes that came through"
expect_run last ok 0
expect_equal "$flood" "$(audit_field last stdout_bytes)" stdout_bytes

suite_done
