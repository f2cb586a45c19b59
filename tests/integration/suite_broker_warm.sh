#!/usr/bin/env bash
# Warm runs with sandshim's launcher through the broker (pool.start = launcher): the launcher's
# socket is in a directory of the broker's on a tmpfs (--launch-dir), mounted into the container.
# A user NOT in the engine's group is served warm (row: warm, engine_args "launch") with exit
# codes and the deadline intact; that user's own processes do not reach the socket through
# /proc/PID/root (the run's group is the broker's), and a process of the run's own uid and gids,
# which does, is hung up on (the broker's uid is answered: the control); a socket the launcher no
# longer holds, or one put in its place with the token read from the container's init, makes the
# run go cold with the warm row saying why.
# Needs root (users, the broker as `sandshim`). About 30 s.
# sandshim-test-engines: docker  # the launcher is docker's (pool.start = launcher)
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

broker_suite_setup sandshim-brokerwarm-nd \
    $'[sandbox]\ntimeout = 4s\n[pool]\nsize = 1\nmax = 1\nidle_ttl = 2m\nstart = launcher\n'
start_warm_broker brokerwarm

mkdir -p "$U/ws"
chown -R "$ND_USER:" "$U/ws"

# Idle entries of the broker's pools (file names are run ids).
idle_entries() { find "$POOL" -mindepth 2 -maxdepth 2 -type f -regex '.*/[0-9a-f]+$' -not -path '*/claimed/*' -printf '%f\n' 2>/dev/null; }
wait_idle_entry() {
    local deadline=$((SECONDS + 60))
    until [[ -n $(idle_entries) ]]; do
        ((SECONDS < deadline)) || fail "no idle warm container within 60s; broker log: $(tail -n 5 "$BSTATE/broker.log")"
        sleep 0.2
    done
    IDLE=$(idle_entries | head -n 1)
    INIT_PID=$("$DOCKER" inspect --format '{{.State.Pid}}' "sandshim-$IDLE")
}
expect_row() { # RUN FIELD VALUE
    expect_equal "$3" "$(broker_row "$1" "$2")" "$2 of run $1"
}
expect_launched() { # RUN yes|no
    local launched=no
    broker_row "$1" engine_args | grep -q '"launch"' && launched=yes
    expect_equal "$2" "$launched" "run $1 went through the launcher"
}

check "control: a first run is cold, and its refill starts a launcher container with the broker's directory"
expect_exit 42 as_nd "$U/ws" sh -c 'exit 42'
expect_row "$(last_broker_run)" warm false
wait_idle_entry
[[ -d $LAUNCH/$IDLE ]] || fail "the idle container $IDLE has no directory in $LAUNCH: $(ls -a "$LAUNCH")"
expect_equal 1733 "$(stat -c %a "$LAUNCH/$IDLE")" "mode of the container's launcher directory"
expect_not_contains "go through exec" "$BSTATE/broker.log"

check "a warm run through the broker is served by the launcher, as the caller, with its exit code"
expect_exit 42 as_nd "$U/ws" sh -c 'echo "$(id -u) $(pwd)"; exit 42'
expect_file_is "$OUT" "$nd_uid $U/ws"
id=$(last_broker_run)
expect_equal "$IDLE" "$id" "the run took the idle container"
expect_row "$id" warm true
expect_launched "$id" yes
expect_row "$id" exit_code 42
[[ ! -e $LAUNCH/$id ]] || fail "the claimed container's launcher directory is still there"

check "its deadline holds: 124, the container removed (and the program cannot write into the launcher's directory)"
wait_idle_entry
expect_exit 124 as_nd "$U/ws" sh -c 'touch /.sandshim/launch/x && echo wrote; sleep 30'
expect_not_contains wrote "$OUT"
id=$(last_broker_run)
expect_equal "$IDLE" "$id" "the deadline run took the idle container"
expect_row "$id" warm true
expect_launched "$id" yes
expect_row "$id" status timeout
container_gone_within "sandshim-$id" 15 || fail "the warm container of the deadline run is still there"

check "the caller cannot connect to the launcher itself: hung up on, and the launcher waits on"
wait_idle_entry
[[ -S $LAUNCH/$IDLE/launch.sock ]] || fail "control: no socket in $LAUNCH/$IDLE"
# (77: hung up on without a hello; 78: a hello; 13: EACCES)
probe='import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    sys.exit(e.errno)
s.settimeout(5)
hello = s.recv(64)
sys.exit(78 if hello[:4] == bytes.fromhex("314c5353") else 77)'
# The caller's processes do not reach the container (its gids are not the run's); a process of
# the run's own uid and gids, which could, is hung up on.
expect_exit 13 as_nd "$U/ws" /usr/bin/python3 -c "$probe" "/proc/$INIT_PID/root/.sandshim/launch/launch.sock"
expect_exit 77 as_run_identity /usr/bin/python3 -c "$probe" "/proc/$INIT_PID/root/.sandshim/launch/launch.sock"
expect_exit 13 as_nd "$U/ws" /usr/bin/python3 -c "$probe" "$LAUNCH/$IDLE/launch.sock"
expect_exit 2 as_nd "$U/ws" ls "$LAUNCH"
check "control: the broker's uid is answered with the launcher's hello (which uses the container up)"
[[ -S $LAUNCH/$IDLE/launch.sock ]] || fail "the launcher left after the caller's attempt"
expect_exit 78 setpriv --reuid=sandshim --regid=sandshim --init-groups /usr/bin/python3 -c "$probe" "$LAUNCH/$IDLE/launch.sock"

check "a claimed launcher without its socket: the run goes cold, the warm row says why"
victim=$IDLE
expect_exit 42 as_nd "$U/ws" sh -c 'echo ran; exit 42'
expect_file_is "$OUT" ran
expect_row "$(last_broker_run)" warm false
expect_row "$victim" status engine_error
expect_contains "has no socket at" <(broker_row "$victim" message)

check "a socket put in the launcher's place with the right token (by the run's own uid and gids: the caller's cannot reach it): refused by its process, cold"
wait_idle_entry
victim=$IDLE
fake='import os, socket, sys
pid, marker = sys.argv[1], sys.argv[2]
token = [e for e in open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
         if e.startswith(b"SANDSHIM_LAUNCH_TOKEN=")][0].split(b"=", 1)[1]
path = f"/proc/{pid}/root/.sandshim/launch/launch.sock"
os.unlink(path)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(1)
open(marker, "w").write("listening\n")
c, _ = s.accept()
c.sendall(bytes.fromhex("314c5353") + token)
open(marker, "a").write("answered\n")
c.recv(64)'
marker=$U/fake.marker
(cd "$U/ws" && exec setpriv --reuid="$nd_uid" --regid="$(id -g "$k_broker_user")" --clear-groups \
    /usr/bin/python3 -c "$fake" "$INIT_PID" "$marker") 2>"$T/fake.err" &
fake_pid=$!
for ((i = 0; i < 100; i++)); do [[ -s $marker ]] && break; sleep 0.1; done
expect_contains listening "$marker"
expect_exit 42 as_nd "$U/ws" sh -c 'echo ran; exit 42'
expect_file_is "$OUT" ran
expect_row "$(last_broker_run)" warm false
wait "$fake_pid" || true
expect_contains answered "$marker" # the token was right: only the listener's process told it apart
expect_row "$victim" status engine_error
expect_contains "which is not the container's launcher" <(broker_row "$victim" message)

check "the caller's descriptors go at the outcome: the worker's later lines (the pool's refill) never reach the caller"
# The caller's pipes end when its client exits, not when the worker has planned the refill; what
# the worker logs after the answer goes to the broker's log, at the broker's level (info).
wait_idle_entry
expect_exit 42 as_nd "$U/ws" env SANDSHIM_LOG=debug sh -c 'exit 42'
expect_contains "broker: outcome told at" "$ERR"
expect_contains "broker: exit received at" "$ERR"
expect_not_contains "step pool refill" "$ERR"
expect_not_contains "broker: worker ended at" "$ERR"
expect_row "$(last_broker_run)" warm true
expect_not_contains "step pool refill" "$BSTATE/broker.log"

check "no launcher directory outlives its container"
wait_idle_entry
# Every launcher directory is an idle container's (the last run's refill publishes its entry
# after its directory is made: waited for, not slept on).
launch_dirs_all_idle() {
    local dir
    for dir in "$LAUNCH"/*; do
        [[ -e $dir ]] || continue
        idle_entries | grep -qx "$(basename "$dir")" || return 1
    done
}
wait_until 30 "every launcher directory belongs to an idle container" launch_dirs_all_idle

suite_done
