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
# shellcheck source=../../install/lib/broker.sh
. "$SOURCE_DIR/install/lib/broker.sh"

readonly ND_USER=sandshim-broker-nd

[[ $(id -u) == 0 ]] || skip_or_fail "needs root to create $ND_USER and start the broker"
broker_ensure_user || skip_or_fail "cannot create the broker's user"
ensure_plain_test_user "$ND_USER" || skip_or_fail "cannot create the test user $ND_USER"
nd_uid=$(id -u "$ND_USER")
nd_gid=$(id -g "$ND_USER")

# Root-owned binary and shims the test user and the broker's user can both run.
mkdir -p "$T/bin" "$T/shims"
cp "$SANDSHIM_BIN" "$T/bin/sandshim"
chmod 755 "$T/bin" "$T/bin/sandshim" "$T/shims"
for tool in python node sh; do ln -s "$T/bin/sandshim" "$T/shims/$tool"; done

SOCK=$T/run/broker.sock
BSTATE=$T/broker-state
AUDIT_DBS+=("$BSTATE/audit.db")
# Stops the suite's broker first, then lib.sh's cleanup, which reads the exit status from $?.
stop_broker_then_cleanup() {
    local rc=$?
    broker_stop_if_started
    (exit "$rc")
    cleanup
}
trap stop_broker_then_cleanup EXIT
# The broker's own system file (the policy's floor): keyed, anchored audit; timeout open to 10m.
SYSCONF=$T/etc/config
ANCHOR=$T/anchors/anchor.log
broker_write_system_config "$SYSCONF" "$BSTATE" "$T/anchors" $'[users]\nmay_set = sandbox.timeout<=10m\n'
start_broker() {
    broker_start "$T/bin/sandshim" "$SOCK" "$BSTATE" --max-runs-per-user 2 --system-config "$SYSCONF" ||
        fail "the broker did not start"
}
start_broker

# The test user's home, config and workspace (its own; the broker only needs to pass through).
U=$T/nd
mkdir -p "$U/.config/sandshim" "$U/ws/sub"
git -C "$U/ws" init -q
printf 'print("from the workspace")\n' >"$U/ws/hello.py"
chown -R "$ND_USER:" "$U"
chmod 755 "$U" "$U/ws"

# Runs CMD as the test user in DIR with the shims first on PATH and the suite's broker.
# (The subshell execs the command, so a background one's $! is the client itself.)
nd_command=(setpriv --reuid="$nd_uid" --regid="$nd_gid" --init-groups
    env -i PATH="$T/shims:/usr/bin:/bin" HOME="$U" LANG=C.UTF-8 SANDSHIM_BROKER=required
    SANDSHIM_BROKER_SOCKET="$SOCK")
as_nd() { # DIR CMD...
    local dir=$1
    shift
    (cd "$dir" && exec "${nd_command[@]}" "$@")
}
# `sandshim audit` as root on the broker's database.
broker_audit() { "$SANDSHIM_BIN" audit "$@" --db "$BSTATE/audit.db"; }
last_broker_run() {
    broker_audit list --limit 1 --json | "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])'
}
broker_row() { # RUN FIELD
    broker_audit show "$1" --json | "$HOST_PY" -c 'import json, sys
v = json.load(sys.stdin)[sys.argv[1]]
print(v if isinstance(v, str) else json.dumps(v))' "$2"
}

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

check "python, node and sh through the shims run sandboxed, as the caller's uid, hostname sandbox"
expect_exit 0 as_nd "$U/ws" python -c 'import os, socket; print(os.getuid(), os.getgid(), socket.gethostname())'
expect_file_is "$OUT" "$nd_uid $nd_gid sandbox"
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
expect_equal "sandshim: sh ran past its deadline of 2s (sandbox.timeout); the container was killed" "$(head -n 1 "$ERR")" "the outcome line"; expect_contains "sandshim: limit hit: " "$ERR"
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

check "a workspace swapped for a symlink to a directory the caller cannot traverse while the request waits is refused"
# A root-only directory holding a readable secret: the caller cannot pass through it.
mkdir -p "$T/locked/inside"
echo "the secret" >"$T/locked/inside/secret"
chmod 700 "$T/locked"
chmod 755 "$T/locked/inside"
chmod 644 "$T/locked/inside/secret"
! as_nd "$U/ws" cat "$T/locked/inside/secret" 2>/dev/null || fail "control: the caller can read the secret"
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
ln -s "$T/locked/inside" "$U/swap"
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

check "a hook decision through the broker is recorded with the caller's uid, not the broker's"
sed "s|/home/user/my-project|$U/ws|" "$SOURCE_DIR/tests/data/hooks/claude/pre_tool_use.json" >"$T/payload.json"
chmod 644 "$T/payload.json"
EXPECT_STDIN=$T/payload.json expect_exit 0 as_nd "$U/ws" "$T/bin/sandshim" hook --agent claude
broker_audit decisions --json --limit 1 >"$OUT"
expect_equal "$nd_uid" "$("$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["uid"])' <"$OUT")" "uid of the broker's decision row"

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

check "a required broker that does not answer fails closed: 125, one line with the fix"
expect_exit 125 env SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$T/run/none.sock" "$T/bin/sandshim" run -- sh -c 'exit 42'
expect_lines 1 "$ERR"
expect_contains "start it with" "$ERR"

check "the broker killed mid-run: the client exits 125 with one line, no container is left"
start_nd_run 1 sh -c 'sleep 30'
kill -KILL "$(broker_started_pid)"
rc=0 && wait "$BG" || rc=$?
expect_equal 125 "$rc" "exit code of the client whose broker died"
expect_lines 1 "$T/bg.err"
expect_contains "went away mid-run" "$T/bg.err"
wait_gone "sandshim-$RUN"

suite_done
