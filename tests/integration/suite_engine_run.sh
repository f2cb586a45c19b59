#!/usr/bin/env bash
# docker's cold run over the Engine API (engine.api = on, the default): the run goes through the
# API socket, not the client (and with engine.api = off, through the client: the control), its
# streams are byte-exact both ways, a terminal gives a TTY of its size, its exit codes are the
# client's, the deadline, a signal and the memory limit end it as they end the client's run, and
# the guardian of a SIGKILLed shim removes the container through the API (with engine.api = off,
# with the client). The other docker suites run on this path by default; a suite with the header
# `# sandshim-test-client: docker` also runs as docker.client.NAME with SANDSHIM_TEST_ENGINE_API=off.
# sandshim-test-engines: docker
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

api_on() { write_user_config <<<"api = on"; }
api_off() { write_user_config <<<"api = off"; }

check "engine.api = on: the run goes over the API socket, and the client never runs"
api_on
expect_exit 42 env SANDSHIM_LOG=debug "$SANDSHIM_BIN" run -- sh -c 'exit 42'
expect_contains "run: over the API socket" "$ERR"
expect_run last error 42
check "control: engine.api = off: the same run goes through the client"
api_off
expect_exit 42 env SANDSHIM_LOG=debug "$SANDSHIM_BIN" run -- sh -c 'exit 42'
expect_not_contains "run: over the API socket" "$ERR"

check "stdout and stderr arrive byte for byte, apart, and the audit counts and tails them"
api_on
expect_exit 0 sandshim run -- sh -c 'head -c 3000000 /dev/urandom >/tmp/d; sha256sum </tmp/d >&2; cat /tmp/d; printf tail-of-out'
expect_equal "$(head -c 3000000 "$OUT" | sha256sum | cut -d' ' -f1)" "$(cut -d' ' -f1 "$ERR")" "stdout's digest inside and outside"
expect_equal 3000011 "$(audit_field last stdout_bytes)" "stdout bytes in the audit"
audit_field last stdout_tail | grep -q "tail-of-out" || fail "the audit's stdout tail misses the last bytes"

check "stdin reaches the container byte for byte and ends with EOF"
head -c 2000000 /dev/urandom >"$T/in.bin"
EXPECT_STDIN=$T/in.bin expect_exit 0 sandshim run -- sh -c 'cat; echo done >&2'
cmp -s "$T/in.bin" "$OUT" || fail "stdin came back changed ($(wc -c <"$OUT") bytes of 2000000)"
expect_file_is "$ERR" "done"

check "127 and 126 as the client gives them (each compared with engine.api = off)"
for mode in off on; do
    write_user_config <<<"api = $mode"
    expect_exit 127 sandshim run -- sh -c 'exec /no/such/program'
    expect_exit 127 sandshim run --image sandshim/sh:bookworm -- no-such-program-here
    expect_exit 126 sandshim run --image sandshim/sh:bookworm -- /etc
done

check "over the API, a program's own engine-like line and 125 are the program's, not an engine error"
api_on
expect_exit 125 sandshim run -- sh -c 'echo "Error response from daemon: made up" >&2; exit 125'
expect_file_is "$ERR" "Error response from daemon: made up"
expect_run last error 125
check "control: through the client, the same line and 125 are read as the engine's"
api_off
expect_exit 125 sandshim run -- sh -c 'echo "Error response from daemon: made up" >&2; exit 125'
expect_run last engine_error 125

check "both ends a terminal: the container gets a TTY of the terminal's size; without one, none"
api_on
rc=0
# The size follows the start (a resize, as the client sends it): the program waits for it.
size_loop='for i in $(seq 100); do s=$(stty size); [ "$s" != "0 0" ] && break; sleep 0.1; done; echo "$s"'
script -qec "stty rows 31 cols 101; $SANDSHIM_BIN run -- sh -c 'tty; $size_loop; exit 42'" /dev/null \
    </dev/null >"$T/tty.out" 2>&1 || rc=$?
expect_equal 42 "$rc" "exit code through a terminal"
grep -aq "/dev/pts/" "$T/tty.out" || fail "no TTY inside: $(head -c 500 "$T/tty.out")"
grep -aq "31 101" "$T/tty.out" || fail "the TTY's size is not the terminal's: $(head -c 500 "$T/tty.out")"
expect_exit 42 sandshim run -- sh -c 'tty; exit 42'
expect_contains "not a tty" "$OUT"

check "the deadline removes the container from outside: 124, nothing left"
api_on
expect_exit 124 sandshim run --timeout 2s -- sh -c 'sleep 30'
expect_run last timeout 124
assert_run_container_gone "sandshim-$(last_run_id)" "its deadline"

check "SIGTERM to the shim reaches the container through the API: 143, nothing left"
"$SANDSHIM_BIN" run --timeout 20s -- sh -c 'sleep 30' >"$T/bg.out" 2>"$T/bg.err" </dev/null &
bg=$!
BG_PIDS+=("$bg")
id=$(wait_for_running_container 20)
kill -TERM "$bg"
rc=0
wait "$bg" || rc=$?
expect_equal 143 "$rc" "exit code after SIGTERM"
expect_run "$id" killed 143
assert_run_container_gone "sandshim-$id" "the signal"

check "the memory limit: the OOM kill is seen on the event stream (status oom, 137)"
write_user_config <<<$'api = on\n[sandbox]\nmemory = 64m'
expect_exit 137 sandshim run -- sh -c 'dd if=/dev/zero of=/dev/null bs=200M count=1 2>/dev/null'
expect_run last oom 137

check "the guardian of a SIGKILLed shim removes the container over the API; with engine.api = off, with the client"
# The real client behind a wrapper that records each call: engine.path names it.
mkdir -p "$T/recording"
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\nexec "%s" "$@"\n' "$T/client.log" "$ENGINE_CLIENT" >"$T/recording/docker"
chmod 755 "$T/recording/docker"
for mode in on off; do
    write_user_config <<<"api = $mode
path = $T/recording/docker"
    : >"$T/client.log"
    "$SANDSHIM_BIN" run --timeout 15s -- sh -c 'sleep 60' >/dev/null 2>&1 </dev/null &
    shim=$!
    BG_PIDS+=("$shim")
    id=$(wait_for_running_container 20)
    kill -KILL "$shim"
    wait "$shim" 2>/dev/null || true
    container_gone_within "sandshim-$id" 10 || fail "engine.api = $mode: sandshim-$id is still there 10 s after its shim's SIGKILL"
    if [[ $mode == on ]]; then
        expect_not_contains "rm " "$T/client.log"
        expect_not_contains "run " "$T/client.log"
    else
        expect_contains "rm --force sandshim-$id" "$T/client.log"
    fi
done

reset_user_config
assert_no_sandshim_containers
suite_done
