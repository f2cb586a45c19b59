#!/usr/bin/env bash
# The broker as the privilege boundary: a user who is NOT in the engine's group runs python, node
# and sh sandboxed through the shims (broker mode), cannot reach the engine itself, and gets every
# exit code, signal and byte of today's direct mode; the broker's policy ignores the user's config;
# system directories are never a workspace; a workspace swapped while the request waits is
# refused; a client killed mid-run and a broker killed mid-run leave no container. Needs root
# (to create the users and start the broker as the system user `sandshim`).
# sandshim-test-engines: docker  # the broker's user reaches docker through the docker group
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

# The broker's own system file (the policy's floor): keyed, anchored audit; timeout open to 10m.
broker_suite_setup sandshim-broker-nd $'[users]\nmay_set = sandbox.timeout<=10m\n'
start_broker --max-runs-per-user 2

# The test user's workspace (its own; the broker only needs to pass through).
mkdir -p "$U/ws/sub"
git -C "$U/ws" init -q
printf 'print("from the workspace")\n' >"$U/ws/hello.py"
chown -R "$ND_USER:" "$U/ws"
chmod 755 "$U/ws"

check "$ND_USER is not in the engine's group: docker ps and a raw connect to the socket fail"
! id -nG "$ND_USER" | tr ' ' '\n' | grep -qx docker || fail "$ND_USER is in the docker group"
expect_exit 1 as_nd "$U/ws" docker ps
expect_contains "permission denied" "$ERR"
expect_exit 13 as_nd "$U/ws" /usr/bin/python3 -c 'import errno, socket, sys
try:
    socket.socket(socket.AF_UNIX).connect("/var/run/docker.sock")
except OSError as e:
    sys.exit(e.errno)'
check "control: the broker's own user reaches the engine"
setpriv --reuid=sandshim --regid=sandshim --init-groups docker ps -q >/dev/null || fail "the broker's user cannot reach docker"

check "python, node and sh through the shims run sandboxed, as the caller's uid (the broker's group first, the caller's beside it), hostname sandbox"
expect_exit 0 as_nd "$U/ws" python -c "import os, socket; print(os.getuid(), os.getgid(), $nd_gid in os.getgroups(), socket.gethostname())"
expect_file_is "$OUT" "$nd_uid $(id -g "$k_broker_user") True sandbox"
expect_exit 0 as_nd "$U/ws" node -e 'console.log(process.getuid(), require("os").hostname())'
expect_file_is "$OUT" "$nd_uid sandbox"
expect_exit 0 as_nd "$U/ws/sub" sh -c 'echo "$(id -u) $(hostname) $(pwd)"; cat ../hello.py'
expect_file_is "$OUT" "$nd_uid sandbox $U/ws/sub
print(\"from the workspace\")"
id=$(last_broker_run)
expect_equal "$nd_uid" "$(broker_row "$id" uid)" "uid in the broker's audit row"
expect_equal "$U/ws" "$(broker_row "$id" workspace)" "workspace in the broker's audit row"

check "exit codes: the program's own (0, 42), deadline 124, refusal 125, OOM 137"
expect_exit 42 as_nd "$U/ws" sh -c 'exit 42'
expect_exit 124 as_nd "$U/ws" "$T/bin/sandshim" run --timeout 2s -- sh -c 'sleep 30'
expect_deadline_outcome "sh" 2s
expect_exit 125 as_nd "$U/ws" "$T/bin/sandshim" run -- perl -e 1
expect_contains 'no image is configured for "perl"' "$ERR"
expect_lines 1 "$ERR"
expect_exit 137 as_nd "$U/ws" "$T/bin/sandshim" run --memory 64m -- python -c 'b = b"x" * (200 << 20)'
expect_equal "sandshim: python was killed at the memory limit of 64m (sandbox.memory)" "$(head -n 1 "$ERR")" "the outcome line"; expect_contains "sandshim: limit hit: " "$ERR"
expect_equal oom "$(broker_row "$(last_broker_run)" status)" "status of the OOM run"

check "stdin reaches the program and its stdout and stderr come back byte-exact"
head -c 300000 /dev/urandom >"$T/blob"
chmod 644 "$T/blob"
EXPECT_STDIN=$T/blob expect_exit 0 as_nd "$U/ws" sh -c 'cat'
cmp "$T/blob" "$OUT" || fail "stdout differs from stdin"
EXPECT_STDIN=$T/blob expect_exit 0 as_nd "$U/ws" sh -c 'cat >&2'
cmp "$T/blob" "$ERR" || fail "stderr differs from stdin"

# Number of the broker's runs recorded as running whose container exists.
running_runs() {
    local id n=0
    for id in $(broker_audit list --status running --json 2>/dev/null |
        "$HOST_PY" -c 'import json, sys; print(" ".join(r["run_id"] for r in json.load(sys.stdin)))'); do
        container_exists "sandshim-$id" && n=$((n + 1))
    done
    echo "$n"
}
# Starts a shim call as the test user in the background once WANT-1 others run; BG is the
# client's pid, RUN the newest run's id once WANT runs have their container.
start_nd_run() { # WANT CMD...
    local want=$1 i
    shift
    (cd "$U/ws" && exec "${nd_command[@]}" "$@") >"$T/bg.out" 2>"$T/bg.err" </dev/null &
    BG=$!
    BG_PIDS+=("$BG")
    for ((i = 0; i < 300; i++)); do
        if (($(running_runs) >= want)); then
            RUN=$(broker_audit list --status running --limit 1 --json |
                "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')
            return 0
        fi
        sleep 0.1
    done
    fail "the background run did not start: $(cat "$T/bg.err")"
}
wait_gone() { # CONTAINER: waits (bounded) for the guardian; fails if it stays
    local i
    for ((i = 0; i < 150; i++)); do
        container_exists "$1" || return 0
        sleep 0.1
    done
    fail "container $1 is still there"
}

check "SIGTERM and SIGINT to the client are forwarded: 143 and 130, container gone"
start_nd_run 1 sh -c 'sleep 30'
kill -TERM "$BG"
rc=0 && wait "$BG" || rc=$?
expect_equal 143 "$rc" "exit code after SIGTERM"
expect_file_is "$T/bg.err" "sandshim: stopped by SIGTERM; the container was stopped"
wait_gone "sandshim-$RUN"
start_nd_run 1 sh -c 'trap "" INT; sleep 30'
kill -INT "$BG"
rc=0 && wait "$BG" || rc=$?
expect_equal 130 "$rc" "exit code after SIGINT"
wait_gone "sandshim-$RUN"

check "a client killed mid-run (SIGKILL) is a killed caller: its container is removed"
start_nd_run 1 sh -c 'sleep 30'
kill -KILL "$BG"
wait "$BG" 2>/dev/null || true
wait_gone "sandshim-$RUN"

check "the user's config may only tighten the broker's policy: a loosening key is refused (125, one line), direct mode reads it"
user_conf=$U/.config/sandshim/config
write_user_conf() { printf '%s\n' "$@" >"$user_conf" && chown "$ND_USER:" "$user_conf"; }
write_user_conf '[sandbox]' 'pids = 32'
expect_exit 0 as_nd "$U/ws" sh -c 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max'
expect_file_is "$OUT" 32
write_user_conf '[sandbox]' 'network = bridge'
expect_exit 125 as_nd "$U/ws" sh -c 'exit 42'
expect_lines 1 "$ERR"
expect_contains "policy refused: $user_conf:2: sandbox.network = \"bridge\"" "$ERR"
expect_equal refused "$(broker_row "$(last_broker_run)" status)" "status of the refused run"
write_user_conf '[engine]' 'path = /bin/true'
expect_exit 125 as_nd "$U/ws" sh -c 'exit 42'
expect_contains "engine.path" "$ERR"
mkdir -p "$T/direct-config/sandshim"
printf '[engine]\nname = docker\n[sandbox]\nhostname = loosened\n' >"$T/direct-config/sandshim/config"
expect_exit 0 env SANDSHIM_BROKER=off XDG_CONFIG_HOME="$T/direct-config" "$T/bin/sandshim" run -- sh -c 'hostname'
expect_file_is "$OUT" loosened

check "users.may_set = sandbox.timeout<=10m: a user's 5m is accepted, 20m (config or flag) refused"
write_user_conf '[sandbox]' 'timeout = 5m'
expect_exit 0 as_nd "$U/ws" sh -c 'exit 0'
expect_exit 124 as_nd "$U/ws" "$T/bin/sandshim" run --timeout 1s -- sh -c 'sleep 30'
write_user_conf '[sandbox]' 'timeout = 20m'
expect_exit 125 as_nd "$U/ws" sh -c 'exit 42'
expect_lines 1 "$ERR"
expect_contains "$user_conf:2: sandbox.timeout" "$ERR"
expect_contains "users.may_set allows up to" "$ERR"
rm "$user_conf"
expect_exit 125 as_nd "$U/ws" "$T/bin/sandshim" run --timeout 20m -- sh -c 'exit 42'
expect_contains "sandbox.timeout" "$ERR"

check "system directories are never a workspace: /run, /var/run, /dev (125, one line)"
for dir in /run /var/run /dev; do
    expect_exit 125 as_nd "$dir" sh -c 'exit 42'
    expect_contains "system directories (/run, /var/run, /proc, /sys, /dev) are never a workspace" "$ERR"
    expect_lines 1 "$ERR"
done
check "the caller's home (from the password database) is never a workspace"
expect_exit 125 as_nd "$(getent passwd "$ND_USER" | cut -d: -f6)" sh -c 'exit 42'
expect_contains "refusing to mount your home directory" "$ERR"

check "a workspace below a directory only its owner may search: the broker says which, not that it changed"
mkdir -p "$U/private/ws"
chown -R "$ND_USER:" "$U/private"
chmod 700 "$U/private"
expect_exit 125 as_nd "$U/private/ws" sh -c 'exit 42'
expect_contains "the broker cannot reach the workspace \"$U/private/ws\": \"$U/private\" is not searchable by other users" "$ERR"
expect_lines 1 "$ERR"
rm -rf "$U/private"

check "a workspace swapped for a symlink to a directory the caller cannot traverse while the request waits is refused"
make_locked_secret
mkdir -p "$U/swap"
chown "$ND_USER:" "$U/swap"
chmod 755 "$U/swap"
# Two long runs hold the test user's two slots, so its next request waits in the broker's queue.
start_nd_run 1 sh -c 'sleep 30'
hold1=$BG
start_nd_run 2 sh -c 'sleep 30'
hold2=$BG
(cd "$U/swap" && as_nd "$U/swap" sh -c 'cat secret; exit 42') >"$T/swap.out" 2>"$T/swap.err" &
swapper=$!
BG_PIDS+=("$swapper")
sleep 1 # the request is queued behind the two runs
mv "$U/swap" "$U/swap.moved"
ln -s "$LOCKED/inside" "$U/swap"
kill -TERM "$hold1" "$hold2"
wait "$hold1" "$hold2" 2>/dev/null || true
rc=0 && wait "$swapper" || rc=$?
expect_equal 125 "$rc" "exit code of the swapped run"
expect_contains "changed" "$T/swap.err"
expect_not_contains "the secret" "$T/swap.out"
rm "$U/swap"

check "sandshim audit through the broker: the caller reads the rows, prune is refused"
expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" audit list --json --limit 1
expect_equal "$nd_uid" "$("$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["uid"])' <"$OUT")" "uid of the row read through the broker"
expect_exit 2 as_nd "$U/ws" "$T/bin/sandshim" audit prune --older-than 1s
expect_contains "an administrator's command" "$ERR"

check "audit through the broker: a user sees only their rows, root sees all; the chain is keyed and verifies"
as_root_client() { env XDG_CONFIG_HOME="$T/no-config" SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$SOCK" "$T/bin/sandshim" "$@"; }
(cd "$U/ws" && as_root_client run -- sh -c 'exit 0') || fail "root's run through the broker failed"
uids_of() { "$HOST_PY" -c 'import json, sys; print(" ".join(sorted({str(r["uid"]) for r in json.load(sys.stdin)})))' <"$1"; }
expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" audit list --json --limit 1000
expect_equal "$nd_uid" "$(uids_of "$OUT")" "uids a user sees through the broker"
expect_exit 0 as_root_client audit list --json --limit 1000
expect_equal "0 $nd_uid" "$(uids_of "$OUT")" "uids root sees through the broker"
expect_exit 0 as_root_client audit verify
expect_contains " hmac:" "$OUT"
expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" audit verify
[[ -s $ANCHOR ]] || fail "the anchor log $ANCHOR is empty"

check "one idle child of the broker (sandshim-audit) holds the audit database open, as the broker's user"
keeper=$(pgrep -P "$(broker_started_pid)" -x sandshim-audit) || fail "no sandshim-audit child of broker $(broker_started_pid)"
expect_equal sandshim "$(stat -c %U "/proc/$keeper")" "owner of the audit keeper"
find "/proc/$keeper/fd" -lname "$BSTATE/audit.db" | grep -q . ||
    fail "the audit keeper $keeper does not hold $BSTATE/audit.db open: $(ls -l "/proc/$keeper/fd" | tr '\n' ' ')"

check "a hook decision through the broker is recorded with the caller's uid, not the broker's"
sed "s|/home/user/my-project|$U/ws|" "$SOURCE_DIR/tests/data/hooks/claude/pre_tool_use.json" >"$T/payload.json"
chmod 644 "$T/payload.json"
EXPECT_STDIN=$T/payload.json expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" hook --agent claude
broker_audit decisions --json --limit 1 >"$OUT"
expect_equal "$nd_uid" "$("$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["uid"])' <"$OUT")" "uid of the broker's decision row"

# A Claude Code payload of EVENT in the test user's workspace, readable by all; the command runs
# unsandboxed by design, so its decision is an allow that waits for its PostToolUse.
claude_payload() { # EVENT TOOL_USE FILE
    agent_payload claude "$1" "echo nothing to sandbox" "$2" "$U/ws" >"$3"
    chmod 644 "$3"
}

check "the hook runs as the caller: CLAUDE_ENV_FILE naming a file of the broker's user is left alone, the caller's own gets the caller's shim directory"
victim=$BSTATE/victim.env
printf 'the broker'"'"'s own file\n' >"$victim"
chown sandshim: "$victim"
chmod 600 "$victim"
cp "$victim" "$T/victim.before"
claude_payload SessionStart "" "$T/start.json"
EXPECT_STDIN=$T/start.json expect_exit 0 as_nd "$U/ws" env CLAUDE_ENV_FILE="$victim" "$T/bin/sandshim" hook --agent claude
cmp "$victim" "$T/victim.before" || fail "the hook appended to the broker's file $victim"
expect_contains "cannot write the session environment" "$ERR"
install -o "$ND_USER" -m 600 /dev/null "$U/session.env"
EXPECT_STDIN=$T/start.json expect_exit 0 as_nd "$U/ws" env CLAUDE_ENV_FILE="$U/session.env" "$T/bin/sandshim" hook --agent claude
expect_contains "export PATH=$U/.local/share/sandshim/bin:" "$U/session.env"
[[ $(stat -c %U "$U/session.env") == "$ND_USER" ]] || fail "the env file changed owner"

check "a workspace .sandshim.conf is read through the caller's descriptor: a regular one tightens, a link to the broker's key or a 16 MiB file is refused unread"
mkdir -p "$U/wsconf"
chown "$ND_USER:" "$U/wsconf"
chmod 755 "$U/wsconf"
printf '[sandbox]\npids = 24\n' >"$U/wsconf/.sandshim.conf"
chown "$ND_USER:" "$U/wsconf/.sandshim.conf"
expect_exit 0 as_nd "$U/wsconf" sh -c 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max'
expect_file_is "$OUT" 24
key=$BSTATE/keys/chain.key
rm "$U/wsconf/.sandshim.conf"
ln -s "$key" "$U/wsconf/.sandshim.conf"
expect_exit 125 as_nd "$U/wsconf" sh -c 'exit 42'
expect_lines 1 "$ERR"
expect_contains "is a symbolic link" "$ERR"
"$HOST_PY" - "$key" "$OUT" "$ERR" <<'EOF' || fail "bytes of the broker's key reached the caller"
import sys
key = open(sys.argv[1], "rb").read()
said = open(sys.argv[2], "rb").read() + open(sys.argv[3], "rb").read()
sys.exit(any(key[i:i + 8] in said for i in range(0, max(1, len(key) - 7))))
EOF
rm "$U/wsconf/.sandshim.conf"
head -c $((16 << 20)) /dev/zero | tr '\0' 'k' >"$U/wsconf/.sandshim.conf"
chown "$ND_USER:" "$U/wsconf/.sandshim.conf"
expect_exit 125 as_nd "$U/wsconf" sh -c 'exit 42'
expect_lines 1 "$ERR"
expect_contains "is larger than the cap" "$ERR"
(($(wc -c <"$ERR") < 400)) || fail "the refusal of a 16 MiB file is $(wc -c <"$ERR") bytes"
rm "$U/wsconf/.sandshim.conf"

check "another user's PostToolUse cannot complete the caller's pending decision; the caller's own does"
ND2_USER=sandshim-broker-nd2
ensure_plain_test_user "$ND2_USER" || skip_or_fail "cannot create the test user $ND2_USER"
U2=$T/nd2
mkdir -p "$U2"
chown "$ND2_USER:" "$U2"
as_nd2() { (cd "$U2" && exec setpriv --reuid="$(id -u "$ND2_USER")" --regid="$(id -g "$ND2_USER")" --init-groups \
    env -i PATH="$T/shims:/usr/bin:/bin" HOME="$U2" LANG=C.UTF-8 SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$SOCK" "$@"); }
completion_of() { # TOOL_USE: the completion fields of the caller's decision row, as root reads them
    broker_audit decisions --json --limit 1000 | "$HOST_PY" -c 'import json, sys
rows = [r for r in json.load(sys.stdin) if r["tool_use_id"] == sys.argv[1]]
print(len(rows), rows[0]["decision"], rows[0]["uid"], rows[0]["completed_ms"], rows[0]["outcome"])' "$1"
}
claude_payload PreToolUse toolu_cross_user "$T/pre.json"
claude_payload PostToolUse toolu_cross_user "$T/post.json"
EXPECT_STDIN=$T/pre.json expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" hook --agent claude
pending=$(completion_of toolu_cross_user)
expect_equal "1 allow $nd_uid None None" "$pending" "the pending decision"
EXPECT_STDIN=$T/post.json expect_exit 0 as_nd2 "$T/bin/sandshim" hook --agent claude
expect_equal "$pending" "$(completion_of toolu_cross_user)" "the decision after another user's PostToolUse"
EXPECT_STDIN=$T/post.json expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" hook --agent claude
[[ $(completion_of toolu_cross_user) == "1 allow $nd_uid "[0-9]*" ran" ]] || fail "the caller's own PostToolUse did not complete it: $(completion_of toolu_cross_user)"

check "SessionEnd closes the session's pending decisions through session_close: the caller's own only, answering how many"
claude_payload PreToolUse toolu_session_end "$T/pre_end.json"
claude_payload SessionEnd "" "$T/end.json"
EXPECT_STDIN=$T/pre_end.json expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" hook --agent claude
pending=$(completion_of toolu_session_end)
expect_equal "1 allow $nd_uid None None" "$pending" "the pending decision"
EXPECT_STDIN=$T/end.json expect_exit 0 as_nd2 env SANDSHIM_LOG=info "$T/bin/sandshim" hook --agent claude
expect_contains "SessionEnd closed 0 pending decision(s)" "$ERR"
expect_equal "$pending" "$(completion_of toolu_session_end)" "the decision after another user's SessionEnd"
EXPECT_STDIN=$T/end.json expect_exit 0 as_nd "$U/ws" env SANDSHIM_LOG=info "$T/bin/sandshim" hook --agent claude
expect_contains "SessionEnd closed 1 pending decision(s)" "$ERR"
[[ $(completion_of toolu_session_end) == "1 allow $nd_uid None not-run" ]] || fail "the caller's own SessionEnd did not close it: $(completion_of toolu_session_end)"

check "a caller's SANDSHIM_CONFIG, SANDSHIM_AUDIT_DB, DOCKER_HOST and LD_PRELOAD steer nothing of the broker"
printf '[sandbox]\nhostname = steered\n' >"$BSTATE/broker-only.conf"
chown sandshim: "$BSTATE/broker-only.conf"
chmod 600 "$BSTATE/broker-only.conf"
expect_exit 0 as_nd "$U/ws" env SANDSHIM_CONFIG="$BSTATE/broker-only.conf" SANDSHIM_AUDIT_DB="$U/steered.db" \
    DOCKER_HOST=tcp://127.0.0.1:9 LD_PRELOAD="$U/none.so" \
    sh -c 'hostname; echo "${SANDSHIM_CONFIG-unset} ${DOCKER_HOST-unset} ${LD_PRELOAD-unset}"'
expect_file_is "$OUT" "sandbox
unset unset unset"
[[ ! -e $U/steered.db ]] || fail "a caller's SANDSHIM_AUDIT_DB was written"
expect_equal "$nd_uid" "$(broker_row "$(last_broker_run)" uid)" "uid of the run in the broker's audit"

check "the user cannot read the chain key, write the database or the anchor log; the broker's user can"
key=$BSTATE/keys/chain.key
setpriv --reuid=sandshim --regid=sandshim --init-groups test -r "$key" || fail "control: the broker's user cannot read its key"
setpriv --reuid=sandshim --regid=sandshim --init-groups test -w "$ANCHOR" || fail "control: the broker's user cannot write the anchor log"
expect_exit 1 as_nd "$U/ws" test -r "$key"
expect_exit 1 as_nd "$U/ws" test -w "$BSTATE/audit.db"
expect_exit 1 as_nd "$U/ws" test -w "$ANCHOR"

check "doctor says which mode is in force: broker mode for the test user, root-equivalent direct mode for root"
as_nd "$U/ws" "$T/bin/sandshim" doctor >"$OUT" 2>&1 || true
expect_contains "mode     broker mode: the broker at $SOCK runs every request" "$OUT"
SANDSHIM_BROKER=off "$T/bin/sandshim" doctor >"$OUT" 2>&1 || true
expect_contains "warn  mode     direct mode (broker.mode = off in \$SANDSHIM_BROKER): this uid reaches the rootful engine socket" "$OUT"

check "the worker reads the request itself: a broken one is one line on the stderr it sent and 125; a silent client leaves the broker serving"
# A raw client: one frame (4-byte big-endian length, then the payload) with stdin, stdout,
# stderr and the cwd as SCM_RIGHTS, then the answer's code.
raw_client='import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
if sys.argv[2] == "silent":
    sys.exit(0)
payload = sys.argv[2].encode()
cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
s.sendmsg([struct.pack(">I", len(payload)) + payload],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("4i", 0, 1, 2, cwd))])
head = s.recv(4, socket.MSG_WAITALL)
body = s.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
sys.exit(json.loads(body)["code"])'
expect_exit 125 as_nd "$U/ws" /usr/bin/python3 -c "$raw_client" "$SOCK" '{not json'
expect_lines 1 "$ERR"
expect_contains "the broker refused the request:" "$ERR"
expect_exit 125 as_nd "$U/ws" /usr/bin/python3 -c "$raw_client" "$SOCK" '{"type":"signal","signal":15,"v":7}'
expect_contains "the broker expected a request first; nothing ran" "$ERR"
expect_exit 0 as_nd "$U/ws" /usr/bin/python3 -c "$raw_client" "$SOCK" silent
expect_exit 42 as_nd "$U/ws" sh -c 'exit 42'

check "the spare session (forked ahead of its connection) killed, and its worker with it: the next requests are served"
daemon=$(broker_started_pid)
# The newest child that is not the audit keeper: each handoff forks the next spare.
spare=$(pgrep -P "$daemon" | grep -vx "$(pgrep -P "$daemon" -x sandshim-audit)" | sort -n | tail -n 1)
[[ -n $spare ]] || fail "no spare session among the broker's children: $(pgrep -a -P "$daemon")"
spare_worker=$(pgrep -P "$spare") || fail "the spare session $spare has no worker"
kill -KILL "$spare"
expect_exit 42 as_nd "$U/ws" sh -c 'exit 42'
expect_exit 0 as_nd "$U/ws" python3 -c 'print("served")'
expect_file_is "$OUT" served
# (Ended: gone, or a zombie left to a PID 1 that may not reap it.)
worker_ended() { [[ ! -e /proc/$spare_worker ]] || [[ $(awk '{print $3}' "/proc/$spare_worker/stat" 2>/dev/null) == Z ]]; }
wait_until 5 "the killed spare's worker $spare_worker ended with it" worker_ended

check "a required broker that does not answer fails closed: 125, one line with the fix"
expect_exit 125 env SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$T/run/none.sock" "$T/bin/sandshim" run -- sh -c 'exit 42'
expect_lines 1 "$ERR"
expect_contains "start it with" "$ERR"

check "a hook whose required broker does not answer denies the command (exit 2, the reason); without the requirement it writes its own audit"
EXPECT_STDIN=$T/pre.json expect_exit 2 as_nd "$U/ws" env SANDSHIM_BROKER_SOCKET="$T/run/none.sock" "$T/bin/sandshim" hook --agent claude
expect_contains '"permissionDecision":"deny"' "$OUT"
expect_contains "no broker answers at $T/run/none.sock" "$OUT"
expect_contains "requires one (broker.mode = required)" "$ERR"
EXPECT_STDIN=$T/pre.json expect_exit 0 as_nd "$U/ws" env SANDSHIM_BROKER=auto SANDSHIM_BROKER_SOCKET="$T/run/none.sock" "$T/bin/sandshim" hook --agent claude
expect_file_is "$OUT" ""
[[ -s $U/.local/state/sandshim/audit.db ]] || fail "the hook without a broker wrote no audit of its own"

check "the broker killed mid-run: the client exits 125 with one line, no container is left"
start_nd_run 1 sh -c 'sleep 30'
kill -KILL "$(broker_started_pid)"
rc=0 && wait "$BG" || rc=$?
expect_equal 125 "$rc" "exit code of the client whose broker died"
expect_lines 1 "$T/bg.err"
expect_contains "went away mid-run" "$T/bg.err"
wait_gone "sandshim-$RUN"

suite_done
