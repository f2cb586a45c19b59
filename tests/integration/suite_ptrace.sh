#!/usr/bin/env bash
# Who can trace a sandboxed process, measured (docs/threat-model.md, "Tracing"): a run's program
# is a host process of the container user's uid (no user namespace). As a caller outside the
# docker group, through the broker: with sandbox.user = auto (the caller's uid) the caller's own
# processes could trace it (strace, gdb, /proc/PID/mem, /proc/PID/environ) until the run's
# primary group became the broker's (the kernel traces only a process whose gids are all the
# tracer's): now every one of those is refused, as with the broker's system file setting
# sandbox.user = 65534:65534; nsenter is refused in both. The reverse: a host process of uid 65534 traces a run of that
# uid, and no program inside a sandbox sees a host process to trace. Needs root.
# sandshim-test-engines: docker  # the broker's user reaches docker through the docker group
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

broker_suite_setup sandshim-ptrace-nd $'[images]\nbash = sandshim/wrap:bookworm\n'
start_broker
for tool in strace gdb nsenter; do
    command -v "$tool" >/dev/null || skip_or_fail "needs $tool"
done
printf 'import time\nprint("ready", flush=True)\ntime.sleep(%s)\n' 60 >"$U/sleeper.py"
chmod 644 "$U/sleeper.py"

# The first of PIDS that lives in another pid namespace than this suite's (the host's): the sandboxed
# program, not its client (whose command line is the same).
in_container() { # PIDS
    local p
    for p in $1; do
        [[ $(readlink "/proc/$p/ns/pid" 2>/dev/null) != "$(readlink /proc/$$/ns/pid)" ]] || continue
        [[ -e /proc/$p ]] && echo "$p" && return 0
    done
}

# Starts `python sleeper.py` as the test user through the broker; PID is its host pid.
start_sleeper() {
    local i
    (cd "$U" && exec "${nd_command[@]}" python sleeper.py) >"$T/bg.out" 2>"$T/bg.err" </dev/null &
    BG=$!
    BG_PIDS+=("$BG")
    for ((i = 0; i < 200; i++)); do
        PID=$(in_container "$(pgrep -f '^python3? sleeper\.py$' || true)")
        [[ -n $PID && -s $T/bg.out ]] && return 0
        sleep 0.1
    done
    fail "the sandboxed program did not start: $(cat "$T/bg.err")"
}
stop_sleeper() {
    local i
    kill -TERM "$BG" 2>/dev/null || true
    wait "$BG" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        [[ -e /proc/$PID ]] || return 0
        sleep 0.1
    done
    fail "the sandboxed program $PID outlived its client"
}

# The pid tracing PID (0: none), from the kernel's view.
tracer_of() {
    local tracer
    tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
    echo "${tracer:-0}"
}

# strace -p PID (STRACE its background pid) has attached, or has ended (refused).
strace_settled() { # PID STRACE
    [[ $(tracer_of "$1") != 0 ]] || ! kill -0 "$2" 2>/dev/null
}

# One word per way in, as WHO (a setpriv prefix): "traced" when it got in, "refused" when not.
attempts() { # PID PREFIX...
    local pid=$1
    shift
    local -a who=("$@")
    local word
    word=refused
    timeout 5 "${who[@]}" strace -qq -e trace=none -p "$pid" -o /dev/null 2>"$T/strace.err" & local s=$!
    wait_until 5 "strace -p $pid attaching or giving up" strace_settled "$pid" "$s"
    [[ $(tracer_of "$pid") != 0 ]] && word=traced
    kill -INT "$s" 2>/dev/null || true
    wait "$s" 2>/dev/null || true
    echo "strace=$word"
    word=refused
    timeout 10 "${who[@]}" gdb -q -batch -p "$pid" -ex 'info proc' >"$T/gdb.out" 2>&1 || true
    grep -q "^process $pid" "$T/gdb.out" && ! grep -q 'ptrace: Operation not permitted' "$T/gdb.out" && word=traced
    echo "gdb=$word"
    word=refused
    "${who[@]}" /usr/bin/python3 -c 'import sys; open(f"/proc/{sys.argv[1]}/mem", "rb").close()' "$pid" 2>/dev/null && word=traced
    echo "mem=$word"
    word=refused
    "${who[@]}" cat "/proc/$pid/environ" >/dev/null 2>&1 && word=traced
    echo "environ=$word"
    word=refused
    "${who[@]}" nsenter -t "$pid" -m -p true 2>/dev/null && word=traced
    echo "nsenter=$word"
}
as_caller=(setpriv --reuid="$nd_uid" --regid="$nd_gid" --init-groups)

# Starts the sleeper, checks its host uid and gid, and what the caller's attempts on it gave.
expect_caller_attempts() { # HOST-UID HOST-GID EXPECTED-WORDS
    start_sleeper
    expect_equal "$1 $2" "$(stat -c '%u %g' "/proc/$PID")" "host uid and gid of the sandboxed program"
    expect_equal "$3" "$(attempts "$PID" "${as_caller[@]}" | tr '\n' ' ')" "the caller's attempts"
}
broker_gid=$(id -g "$k_broker_user")

check "sandbox.user = auto: the program runs as the caller's uid with the broker's group, and no way in is the caller's"
[[ $broker_gid != "$nd_gid" ]] || fail "the broker's user and the test user share a group"
expect_caller_attempts "$nd_uid" "$broker_gid" "strace=refused gdb=refused mem=refused environ=refused nsenter=refused "
# The control: every way in works for root, so each "refused" above could have read "traced".
expect_equal "strace=traced gdb=traced mem=traced environ=traced nsenter=traced " \
    "$(attempts "$PID" env | tr '\n' ' ')" "control: root's attempts"
# The other direction: the caller's uid with the run's group as its own traces it (the gid is
# what keeps the caller out).
attempts "$PID" setpriv --reuid="$nd_uid" --regid="$broker_gid" --clear-groups >"$T/as-run"
expect_contains "strace=traced" "$T/as-run"
stop_sleeper
# What the caller's group may reach, the run reaches (its supplementary group), and what it
# makes is the caller's.
mkdir -p "$U/ws" && chown "$ND_USER:" "$U/ws"
echo shared >"$U/ws/group-only.txt" && chown "root:$nd_gid" "$U/ws/group-only.txt" && chmod 640 "$U/ws/group-only.txt"
expect_exit 0 as_nd "$U/ws" sh -c 'echo "$(id -u) $(id -g) $(id -G)"; cat group-only.txt'
expect_contains "$nd_uid $broker_gid" "$OUT"
expect_contains " $nd_gid" "$OUT"
expect_contains "shared" "$OUT"
expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" -c 'echo x >made.txt' # the agent's whole command: rw
expect_equal "$ND_USER" "$(stat -c %U "$U/ws/made.txt")" "the owner of what the run made"

check "sandbox.user = 65534:65534 in the broker's system file: every way in is refused to the caller"
printf '\n[sandbox]\nuser = 65534:65534\n' >>"$SYSCONF"
expect_caller_attempts 65534 65534 "strace=refused gdb=refused mem=refused environ=refused nsenter=refused "
# The control: every way in works for root, so each "refused" above could have read "traced".
expect_equal "strace=traced gdb=traced mem=traced environ=traced nsenter=traced " \
    "$(attempts "$PID" env | tr '\n' ' ')" "control: root's attempts"

check "the reverse: a host process of uid 65534 traces that run; the run sees no host process"
attempts "$PID" setpriv --reuid=65534 --regid=65534 --clear-groups >"$T/as-nobody"
expect_contains "strace=traced" "$T/as-nobody"
stop_sleeper
expect_exit 0 as_nd "$U" sh -c 'ls /proc | grep -c "^[0-9]"'
[[ $(cat "$OUT") -lt 10 ]] || fail "the sandbox sees $(cat "$OUT") processes"
# Host processes of uid 65534 outside containers, on this machine, now (informational: each of
# them could trace a run of root's, which runs as 65534 under sandbox.user = auto).
host_nobody=0
for p in $(ps -eo uid=,pid= | awk '$1 == 65534 {print $2}'); do
    [[ $(readlink "/proc/$p/ns/pid" 2>/dev/null) != "$(readlink /proc/$$/ns/pid)" ]] || host_nobody=$((host_nobody + 1))
done
say "host processes of uid 65534 outside containers: $host_nobody"

suite_done
