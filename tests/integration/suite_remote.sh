#!/usr/bin/env bash
# A remote engine (engine.endpoint = tcp://… with TLS): a second dockerd in network and mount
# namespaces of the suite's own (remote_engine.sh), where the workspace's path does not exist.
# The workspace travels as a snapshot volume, read-only in the run; stdio, exit codes and the
# deadline behave as locally; only sandbox.writable comes back, through a careful tar reader;
# the audit row names the engine.
# sandshim-test-engines: docker
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=remote_engine.sh
. "$SOURCE_DIR/tests/integration/remote_engine.sh"

trap 'rc=$?; remote_engine_stop; (exit $rc); cleanup' EXIT # cleanup reads the suite's exit code
remote_engine_start sandshim/python:bookworm

remote_config() { # extra config lines on stdin
    write_user_config < <(printf 'endpoint = %s\ntls_cert_path = %s\n' "$REMOTE_ENGINE_ENDPOINT" "$REMOTE_ENGINE_CERTS"; cat)
}

mkdir -p "$WS/pkg" "$WS/out"
printf 'VALUE = 42\n' >"$WS/pkg/data.py"
cat >"$WS/main.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkg.data import VALUE
print("value", VALUE, "cwd", os.getcwd())
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
PY
git -C "$WS" add -A >/dev/null

check "the workspace's path does not exist on the remote engine's machine"
engine_root=/proc/$(remote_engine_pid)/root
[[ -e $WS && -d $engine_root$T ]] || fail "control: $WS here, and $T (its empty tmpfs) there"
[[ ! -e $engine_root$WS ]] || fail "the remote engine's mount namespace shows $WS"

check "a script in the workspace runs on the remote engine and sees the workspace's files"
remote_config </dev/null
expect_exit 42 sandshim run -- python main.py 42
expect_contains "value 42 cwd $WS" "$OUT"
expect_contains "to stderr" "$ERR"
expect_run last error 42
expect_equal "docker@$REMOTE_ENGINE_ENDPOINT" "$(audit_field last engine)" "the audit row's engine"
expect_contains "sent" <(audit_field last message)

check "an unchanged tree is not sent again"
expect_exit 0 sandshim run -- python main.py
expect_contains "on the engine already" <(audit_field last message)
expect_run last ok 0

check "stdin reaches the program and its stdout comes back byte for byte"
printf 'line one\nline two\n' >"$T/stdin"
EXPECT_STDIN=$T/stdin expect_exit 0 sandshim run -- python -c 'import sys; sys.stdout.write(sys.stdin.read().upper())'
expect_file_is "$OUT" "$(printf 'LINE ONE\nLINE TWO')"

check "the workspace is read-only in the run"
expect_exit 73 sandshim run -- python -c 'import sys
try:
    open("main.py", "a").write("x")
except OSError as e:
    print(e, file=sys.stderr); sys.exit(73)
sys.exit(42)'
expect_contains "Permission denied" "$ERR"
check "the workspace's volume is mounted read-only"
expect_exit 0 sandshim run -- python -c 'import sys
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    if fields[4] == sys.argv[1]:
        print("options", fields[5])' "$WS"
expect_contains "options ro," "$OUT"

check "workspace = rw is refused on a remote engine with one line"
expect_exit 125 sandshim run --workspace rw -- python -c 'pass'
expect_file_is "$ERR" "sandshim: engine.endpoint \"$REMOTE_ENGINE_ENDPOINT\": workspace = rw needs a local engine (the workspace travels as a read-only snapshot); name the directories that should come back in sandbox.writable; nothing ran"
expect_run last refused 125

check "the deadline ends a run on the remote engine as it does locally"
expect_exit 124 sandshim run --timeout 2s -- python -c 'import time; time.sleep(30)'
expect_run last timeout 124
((ELAPSED_MS < 10000)) || fail "the 2 s deadline took ${ELAPSED_MS} ms"

check "a shim killed by SIGKILL leaves no container on the remote engine (its guardian removes it over TLS)"
# (A short deadline: the guardian removes the container again until the deadline has passed, and
# the suite waits for it before it stops the engine, below.)
"$SANDSHIM_BIN" run --timeout 10s -- python -c 'import time; time.sleep(60)' >/dev/null 2>&1 &
shim_pid=$!
BG_PIDS+=("$shim_pid")
until [[ -n $(remote_docker ps -q --filter label=org.sandshim.run) ]]; do
    kill -0 "$shim_pid" 2>/dev/null || fail "the run ended before its container started"
    sleep 0.1
done
kill -KILL "$shim_pid"
wait "$shim_pid" 2>/dev/null || true
deadline=$((SECONDS + 15))
while [[ -n $(remote_docker ps -aq --filter label=org.sandshim.run) ]]; do
    ((SECONDS < deadline)) || fail "the remote container outlived its killed shim by 15 s"
    sleep 0.2
done

check "what the run writes in sandbox.writable comes back; writes elsewhere do not"
printf 'before\n' >"$WS/out/old.txt"
remote_config <<<$'[sandbox]\nwritable = out'
expect_exit 0 sandshim run -- python -c 'import os
print(open("out/old.txt").read().strip())
os.makedirs("out/sub", exist_ok=True)
open("out/sub/result.txt", "w").write("computed remotely\n")
open("/tmp/elsewhere.txt", "w").write("stays\n")
try:
    open("escape.txt", "w").write("no")
except OSError as e:
    print("workspace:", e.strerror)'
expect_contains "before" "$OUT"
expect_contains "workspace: Read-only file system" "$OUT"
expect_file_is "$WS/out/sub/result.txt" "computed remotely"
[[ ! -e $WS/escape.txt && ! -e $WS/elsewhere.txt ]] || fail "a write outside sandbox.writable came back"
expect_contains "returned 2 files" <(audit_field last message)
expect_run last ok 0

check "what comes back with a link in it is refused whole: nothing is written"
expect_exit 0 sandshim run -- python -c 'import os
open("out/innocent.txt", "w").write("x")
os.symlink("/etc/passwd", "out/link")'
[[ ! -e $WS/out/innocent.txt && ! -L $WS/out/link ]] || fail "an archive with a link was unpacked"
expect_contains "refused what came back" <(audit_field last message)
expect_contains "a link" <(audit_field last message)
remote_config </dev/null

check "no container and no writable volume is left on the remote engine"
wait_until 30 "every guardian of the suite's runs ends" remote_runs_ended
left=$(remote_docker ps -aq)
[[ -z $left ]] || fail "containers left on the remote engine: $left"
left=$(remote_docker volume ls -q --filter label=org.sandshim.writable)
[[ -z $left ]] || fail "writable volumes left on the remote engine: $left"

suite_done
