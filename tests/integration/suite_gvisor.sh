#!/usr/bin/env bash
# sandshim-test-engines: docker podman
# sandshim-test-labels: gvisor
# A kernel of its own: sandbox.runtime = runsc runs the command on gVisor's kernel (its uname,
# not the host's) and a workspace file may choose it but never go back to runc. Two things that
# broke runs under runsc, each proven both ways: threads start (gVisor answers a refused clone3
# with EPERM, not the profile's ENOSYS, so glibc never fell back to clone: the profile sandshim
# gives runsc lets clone3 through to gVisor, which answers ENOSYS itself), and sandbox.pids stops
# a fork bomb inside gVisor with EAGAIN instead of killing the sandbox (the host's pids cgroup
# counts gVisor's own threads and stubs, and the sentry died with exit 2 at the cap). A gap
# pinned both ways: gVisor's write(2) to stdout can be short (runc's never is), so the caller's
# PYTHONUNBUFFERED stays out under runsc and a large print arrives whole.
# SANDSHIM_TEST_GVISOR=1 also runs the isolation suite and the hostile corpus under runsc
# (SANDSHIM_TEST_RUNTIME): every isolation property on gVisor in both directions (slow, opt-in).
# docker needs runsc registered and podman's seccomp profile on disk (install/deps.sh
# --with-gvisor); podman takes /usr/bin/runsc as it is.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -x /usr/bin/runsc ]] || skip_or_fail "no /usr/bin/runsc (install/deps.sh --with-gvisor)"
if [[ $ENGINE == docker ]] && ! "$ENGINE_CLIENT" info --format '{{json .Runtimes}}' | grep -q '"runsc-nonet"'; then
    skip_or_fail "runsc is not registered with docker (install/deps.sh --with-gvisor)"
fi
host_kernel=$(uname -r)

cat >"$WS/threads.py" <<'EOF'
# Starts a thread: 42 when it ran, 73 when it could not start.
import sys, threading
try:
    thread = threading.Thread(target=print, args=("thread ran",))
    thread.start()
    thread.join()
except RuntimeError as e:
    print(e, file=sys.stderr)
    sys.exit(73)
sys.exit(42)
EOF
cp "$SOURCE_DIR/tests/integration/programs/forks.py" "$SOURCE_DIR/tests/integration/programs/short_writes.py" "$WS/"

# The engine command sandshim would run for CMD under runsc, with its seccomp profile swapped
# for PROFILE ("" drops it: the engine's default), run directly. Output in $OUT and $ERR.
run_engine_command_with_profile() { # PROFILE CMD...
    local profile=$1
    shift
    sandshim run --dry-run -- "$@" >"$T/dry"
    "$HOST_PY" - "$T/dry" "$profile" >"$T/edited" <<'EOF'
import shlex, sys
argv = [a for a in shlex.split(open(sys.argv[1]).read()) if not a.startswith("--security-opt=seccomp=")]
if sys.argv[2]:
    argv.insert(argv.index("--cap-drop=ALL"), "--security-opt=seccomp=" + sys.argv[2])
sys.stdout.write("\0".join(argv) + "\0")
EOF
    mapfile -d '' -t argv <"$T/edited"
    EXTRA_CONTAINERS+=("$(printf '%s\n' "${argv[@]}" | sed -n 's/^--name=//p')")
    say "control: ${argv[*]}"
    RC=0
    timeout -k 5 120 "${argv[@]}" </dev/null >"$OUT" 2>"$ERR" || RC=$?
}

check "runc (default): the command sees the host's kernel"
expect_exit 0 sandshim run -- sh -c 'uname -r'
expect_file_is "$OUT" "$host_kernel"

check "runsc: the command sees gVisor's kernel, not the host's"
write_user_config <<<$'[sandbox]\nruntime = runsc'
expect_exit 0 sandshim run -- sh -c 'uname -r'
[[ -s $OUT && $(head -1 "$OUT") != "$host_kernel" ]] || fail "uname under runsc is the host's: $(cat "$OUT")"
if [[ $ENGINE == docker ]]; then
    expect_contains '"--runtime=runsc-nonet"' <(audit_field last engine_args)
else
    expect_contains '"--runtime=runsc"' <(audit_field last engine_args)
fi
expect_contains '/seccomp/runsc-' <(audit_field last engine_args)

check "runsc: a workspace file may choose it, and may not go back to runc"
reset_user_config
printf '[sandbox]\nruntime = runsc\n' >"$WS/.sandshim.conf"
expect_exit 0 sandshim run -- sh -c 'uname -r'
[[ $(cat "$OUT") != "$host_kernel" ]] || fail "the workspace's runtime = runsc did not apply"
write_user_config <<<$'[sandbox]\nruntime = runsc'
printf '[sandbox]\nruntime = runc\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- sh -c 'uname -r'
expect_contains "would loosen the policy (runsc -> runc)" "$ERR"
rm "$WS/.sandshim.conf"

check "runsc: threads start (python threading, node)"
expect_exit 42 sandshim run -- python threads.py
expect_file_is "$OUT" "thread ran"
expect_exit 0 sandshim run -- node -e 'console.log("node ran")'
expect_file_is "$OUT" "node ran"

check "runsc gap: a 1 MiB write(2) to stdout writes short under gVisor, and sandshim delivers what was written"
# Debian's runsc (2022) hands a blocking stdout's write to the host's pipe without waiting for
# room: the call returns the part that fitted. A program that ignores the count loses the rest
# with exit 0 (python -u's print); one that writes the rest (buffered stdio, coreutils, Node)
# loses nothing. The relay is not where it goes: every byte written reaches the caller.
expect_exit 42 sandshim run -- python short_writes.py
expect_contains "of 16 writes short" "$ERR"
delivered=$(wc -c <"$OUT")
((delivered < 16 << 20)) || fail "16 MiB arrived whole under runsc: the gap is gone (update docs/engines.md)"
expect_equal "$delivered" "$(audit_field last stdout_bytes)" "stdout_bytes in the audit"
say "under runsc 16 writes of 1 MiB delivered $delivered bytes ($(cat "$ERR"))"

# Prints the PYTHONUNBUFFERED it sees, then 16 MiB in one print (a line of 16777217 bytes).
readonly print_16mib='import os; print(os.environ.get("PYTHONUNBUFFERED")); print("P" * (1 << 24))'
check "runsc: the caller's PYTHONUNBUFFERED stays out, so a 16 MiB print arrives whole"
PYTHONUNBUFFERED=1 expect_exit 0 sandshim run -- python -c "$print_16mib"
expect_equal None "$(head -n 1 "$OUT")" "PYTHONUNBUFFERED inside"
expect_equal $((5 + (16 << 20) + 1)) "$(wc -c <"$OUT")" "bytes of the print delivered under runsc"

check "runc control: the same writes are whole, and PYTHONUNBUFFERED passes"
reset_user_config
expect_exit 73 sandshim run -- python short_writes.py
expect_file_is "$ERR" "0 of 16 writes short"
expect_equal $((16 << 20)) "$(wc -c <"$OUT")" "bytes delivered under runc"
PYTHONUNBUFFERED=1 expect_exit 0 sandshim run -- python -c "$print_16mib"
expect_equal 1 "$(head -n 1 "$OUT")" "PYTHONUNBUFFERED inside"
expect_equal $((2 + (16 << 20) + 1)) "$(wc -c <"$OUT")" "bytes of the print delivered under runc"
write_user_config <<<$'[sandbox]\nruntime = runsc'

check "runsc control: with clone3 refused by the profile (ENOSYS asked, EPERM given) no thread starts"
if [[ $ENGINE == docker ]]; then
    run_engine_command_with_profile "" python3 threads.py # docker's built-in default refuses clone3
else
    refusing=$(find "$XDG_STATE_HOME/sandshim/seccomp" -name 'podman-*.json' | head -1)
    [[ -n $refusing ]] || fail "no podman profile from the runc run above"
    run_engine_command_with_profile "$refusing" python3 threads.py
fi
expect_equal 73 "$RC" "exit code of threads.py with clone3 refused"
expect_contains "can't start new thread" "$ERR"

check "runsc: the pids cap (64) stops a fork bomb with EAGAIN inside gVisor, and the run ends"
expect_exit 42 sandshim run -- python forks.py
expect_contains EAGAIN "$ERR"
forks=$(cat "$OUT")
((forks >= 40 && forks < 64)) || fail "forked $forks children under a 64 pids cap"
expect_run last error 42
expect_contains '"--ulimit=nproc=64:64"' <(audit_field last engine_args)

check "runsc pids control: with --pids 128 the same script forks all 100 children"
expect_exit 73 sandshim run --pids 128 -- python forks.py
expect_file_is "$OUT" 100

check "runsc control: the host cgroup at the pids cap kills the sandbox itself, not the program (exit 2 seen)"
sandshim run --dry-run -- python3 forks.py >"$T/dry"
sed -e 's/--pids-limit=[0-9]*/--pids-limit=64/' -e 's/--ulimit=nproc=64:64/--ulimit=nproc=1024:1024/' "$T/dry" >"$T/old"
"$HOST_PY" -c 'import shlex, sys; sys.stdout.write("\0".join(shlex.split(open(sys.argv[1]).read())) + "\0")' "$T/old" >"$T/old0"
mapfile -d '' -t argv <"$T/old0"
EXTRA_CONTAINERS+=("$(printf '%s\n' "${argv[@]}" | sed -n 's/^--name=//p')")
RC=0
timeout -k 5 120 "${argv[@]}" </dev/null >"$OUT" 2>"$ERR" || RC=$?
((RC != 42 && RC != 73)) || fail "the fork bomb ended as a program ($RC) under the host's cap: $(cat "$ERR")"
say "under the host's pids cap the run ended with $RC (gVisor's sentry could not start a thread)"
reset_user_config

if [[ ${SANDSHIM_TEST_GVISOR:-0} == 1 ]]; then
    check "the isolation suite, under runsc"
    started=$EPOCHREALTIME
    SANDSHIM_TEST_RUNTIME=runsc bash "$SOURCE_DIR/tests/integration/suite_isolation.sh" ||
        fail "the isolation suite fails under runsc (see above)"
    say "isolation under runsc: $(($(ms_since "$started") / 1000))s"
    check "the hostile corpus, under runsc"
    started=$EPOCHREALTIME
    SANDSHIM_TEST_RUNTIME=runsc bash "$SOURCE_DIR/tests/integration/suite_hostile.sh" ||
        fail "the hostile corpus fails under runsc (see above)"
    say "hostile corpus under runsc: $(($(ms_since "$started") / 1000))s"
else
    say "the isolation suite and the hostile corpus under runsc: SANDSHIM_TEST_GVISOR=1"
fi
suite_done
