#!/usr/bin/env bash
# sandshim-test-engines: docker
# sandshim-test-alone: yes  # loads the whole machine or times it: no other test runs beside it in CI
# (docker only: the faults are injected into a private dockerd the suite starts for itself —
# killed, paused, its socket moved away — which needs root and a daemon; the shared engine
# other tests use is never touched.)
#
# Faults around the sandbox. For each: the documented exit code, one clear line, the command
# never runs on the host (it would leave a marker file in the workspace), no container outlives
# its deadline, and `sandshim audit verify` passes on what was recorded.
#   engine: the daemon dies mid-run or is down; the daemon (and its containerd) is paused
#           mid-run or before the run; the socket disappears before and during a run; the image
#           is removed before and while runs start
#   audit:  the disk holding the database fills (before a run and mid-run); the database is
#           locked past the busy timeout; the file is corrupt or truncated
#   policy: the config file changes during a run
#   shim:   SIGINT, SIGTERM, SIGHUP and SIGKILL at random points of runs (seed printed; set
#           SANDSHIM_FAULT_SEED to replay)
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=private_engine.sh
. "$SOURCE_DIR/tests/integration/private_engine.sh"

SMALL_DISK=$T/small-disk
suite_teardown() {
    local rc=$?
    private_engine_stop
    # the private engine is gone: cleanup looks at the shared one
    DOCKER=$PRIVATE_ENGINE_CLIENT
    ENGINE_CLIENT=$PRIVATE_ENGINE_CLIENT
    mountpoint -q "$SMALL_DISK" && umount "$SMALL_DISK"
    (exit "$rc")
    cleanup
}
trap suite_teardown EXIT

private_engine_start sandshim/sh:bookworm
# Every check below talks to the private engine: sandshim through engine.endpoint, the
# harness's own container checks through $DOCKER and $ENGINE_CLIENT.
mkdir -p "$T/bin"
printf '#!/bin/sh\nexec %q -H %q "$@"\n' "$DOCKER" "$PRIVATE_ENGINE_ADMIN" >"$T/bin/docker"
chmod +x "$T/bin/docker"
DOCKER=$T/bin/docker
ENGINE_CLIENT=$DOCKER
{
    printf '[engine]\nendpoint = %s\n' "$PRIVATE_ENGINE_HOST"
    engine_api_line
} >"$XDG_CONFIG_HOME/sandshim/config"

# The command every fault runs: it tries to leave a marker in the workspace (read-only in the
# sandbox, so only a run on the host could create it), says where it runs, sleeps, exits 42.
MARKER=$WS/ran-on-host
FAULT_SCRIPT='touch "$1" 2>/dev/null; echo "in $(hostname)"; sleep "$2"; exit 42'
fault_argv() { # TIMEOUT SLEEP [MORE sandshim run FLAGS...]: sets FAULT_ARGV
    FAULT_ARGV=(run --timeout "$1" "${@:3}" -- sh -c "$FAULT_SCRIPT" sh "$MARKER" "$2")
}
fault_run() { # TIMEOUT SLEEP [MORE sandshim run FLAGS...]
    fault_argv "$@"
    "$SANDSHIM_BIN" "${FAULT_ARGV[@]}"
}
# In the background, a simple command (a function would carry the harness's ERR trap along).
fault_run_in_background() { # TIMEOUT SLEEP [MORE FLAGS...]; sets BG_RUN
    fault_argv "$@"
    "$SANDSHIM_BIN" "${FAULT_ARGV[@]}" >"$OUT" 2>"$ERR" </dev/null &
    BG_RUN=$!
    BG_PIDS+=("$BG_RUN")
}

expect_not_on_host() {
    [[ ! -e $MARKER ]] || fail "the command ran on the host: $MARKER exists"
}

# Exactly one line on stderr, from sandshim, containing TEXT.
expect_one_line() { # TEXT FILE
    expect_lines 1 "$2"
    expect_contains "sandshim: " "$2"
    expect_contains "$1" "$2"
}

# A run ended at a limit: its one outcome line, then the limit line naming KEY (lib.sh's rule).
expect_outcome_and_limit() { # TEXT KEY FILE
    expect_lines 2 "$3"
    head -n 1 "$3" | grep -qF -- "$1" || fail "the first line of $(basename "$3") lacks '$1': $(cat "$3")"
    tail -n 1 "$3" | grep -qF -- "sandshim: limit hit: $2 = " || fail "no limit line for $2: $(cat "$3")"
}

expect_verified() {
    audit_cmd verify >"$T/verify.out"
    expect_contains "ok: " "$T/verify.out"
}

# Waits until container NAME is gone from the private engine; fails after SECONDS.
expect_container_gone_within() { # NAME SECONDS
    local until=$((SECONDS + $2))
    while ((SECONDS <= until)); do
        container_exists "$1" || return 0
        sleep 0.25
    done
    fail "container $1 still exists $2 s later"
}

# Starts a fault run in the background; sets BG_RUN (its pid), BG_STARTED, RUN_ID (once its
# container runs).
start_fault_run() { # TIMEOUT SLEEP
    BG_STARTED=$EPOCHREALTIME
    fault_run_in_background "$@"
    RUN_ID=$(wait_for_running_container 30)
}

wait_bg_run() { # sets BG_RC and BG_MS (since the run started)
    BG_RC=0
    wait "$BG_RUN" || BG_RC=$?
    BG_MS=$(ms_since "$BG_STARTED")
}

# ---------------------------------------------------------------------------------------------
check "control: a run in the private engine, and the marker script on the host"
expect_exit 42 fault_run 20s 0
expect_file_is "$OUT" "in sandbox"
expect_not_on_host
expect_run last error 42
rc=0
sh -c "$FAULT_SCRIPT" sh "$T/host-marker" 0 >/dev/null || rc=$?
expect_equal 42 "$rc" "control: the script's exit code on the host"
[[ -e $T/host-marker ]] || fail "control: the script does not leave its marker when run on the host"

# ---------------------------------------------------------------------------------------------
check "engine: the daemon is SIGKILLed mid-run: 125, one line, the container gone once it restarts"
start_fault_run 30s 60
private_engine_kill KILL
wait_bg_run
expect_equal 125 "$BG_RC" "exit code"
expect_one_line "the container engine was lost while the command ran" "$ERR"
expect_run "$RUN_ID" engine_error 125
private_engine_wait_dead
private_engine_up || fail "cannot restart the private dockerd"
# The restarted daemon (or the guardian) removes it, well before its 30 s deadline.
expect_container_gone_within "sandshim-$RUN_ID" 20
say "container gone $(($(ms_since "$BG_STARTED") / 1000)) s after the run started (deadline 30 s)"
expect_not_on_host
expect_verified

check "engine: the daemon is down before the run: 125, one line naming the engine, nothing ran"
private_engine_kill KILL
private_engine_wait_dead
rows_before=$(run_count)
expect_exit 125 fault_run 20s 0
expect_one_line "the engine is not running" "$ERR"
expect_contains "nothing ran" "$ERR"
expect_equal $((rows_before + 1)) "$(run_count)" "rows"
expect_run last engine_error 125
private_engine_up || fail "cannot restart the private dockerd"
expect_not_on_host

# ---------------------------------------------------------------------------------------------
check "engine: daemon and containerd paused mid-run: 124 by deadline + 5 s, container gone after resume"
start_fault_run 4s 60
private_engine_pause
wait_bg_run
private_engine_resume
expect_equal 124 "$BG_RC" "exit code"
((BG_MS <= 4000 + 5000 + 3000)) || fail "the shim ended ${BG_MS} ms after the start (deadline 4 s + 5 s grace)"
expect_outcome_and_limit "did not confirm the container's removal" sandbox.timeout "$ERR"
expect_run "$RUN_ID" timeout 124
expect_container_gone_within "sandshim-$RUN_ID" 30
say "shim ended after ${BG_MS} ms; container gone $(($(ms_since "$BG_STARTED") / 1000)) s after the start"
expect_not_on_host
expect_verified

check "engine: daemon paused before the run: 124 by deadline + 5 s, no container after resume"
private_engine_pause
started=$EPOCHREALTIME
rc=0
fault_run 3s 60 >"$OUT" 2>"$ERR" </dev/null || rc=$?
elapsed=$(ms_since "$started")
private_engine_resume
expect_equal 124 "$rc" "exit code"
((elapsed <= 3000 + 5000 + 3000)) || fail "the shim ended after ${elapsed} ms (deadline 3 s + 5 s grace)"
expect_outcome_and_limit "did not confirm the container's removal" sandbox.timeout "$ERR"
id=$(last_run_id)
expect_run "$id" timeout 124
expect_container_gone_within "sandshim-$id" 30
expect_not_on_host

# ---------------------------------------------------------------------------------------------
check "engine: the socket is gone before the run: 125, one line, nothing ran"
mv "$PRIVATE_ENGINE_DIR/docker.sock" "$PRIVATE_ENGINE_DIR/docker.sock.away"
expect_exit 125 fault_run 20s 0
mv "$PRIVATE_ENGINE_DIR/docker.sock.away" "$PRIVATE_ENGINE_DIR/docker.sock"
expect_one_line "the engine is not running" "$ERR" # its fix, whichever path (client or API) met the missing socket
expect_contains "nothing ran" "$ERR"
expect_run last engine_error 125
expect_not_on_host

check "engine: the socket disappears mid-run: 124 by deadline + 5 s, the guardian removes it once it is back"
start_fault_run 4s 60
mv "$PRIVATE_ENGINE_DIR/docker.sock" "$PRIVATE_ENGINE_DIR/docker.sock.away"
wait_bg_run
expect_equal 124 "$BG_RC" "exit code"
((BG_MS <= 4000 + 5000 + 3000)) || fail "the shim ended ${BG_MS} ms after the start"
expect_outcome_and_limit "did not confirm the container's removal" sandbox.timeout "$ERR"
container_exists "sandshim-$RUN_ID" || fail "control: the container is gone although no engine was reachable"
mv "$PRIVATE_ENGINE_DIR/docker.sock.away" "$PRIVATE_ENGINE_DIR/docker.sock"
expect_container_gone_within "sandshim-$RUN_ID" 15
expect_run "$RUN_ID" timeout 124
expect_not_on_host
expect_verified

# ---------------------------------------------------------------------------------------------
check "engine: the image is removed before the run: 125, one line naming the image"
private_docker tag sandshim/sh:bookworm sandshim-faults/victim:1
expect_exit 42 fault_run 20s 0 --image sandshim-faults/victim:1
private_docker rmi sandshim-faults/victim:1 >/dev/null
expect_exit 125 fault_run 20s 0 --image sandshim-faults/victim:1
expect_one_line "image sandshim-faults/victim:1 is not present" "$ERR"
expect_run last engine_error 125
expect_not_on_host

SEED=${SANDSHIM_FAULT_SEED:-$((EPOCHSECONDS % 100000))}
say "random seed: $SEED (SANDSHIM_FAULT_SEED=$SEED replays it)"
RANDOM=$SEED

check "engine: the image is removed while runs start: each either runs in the sandbox or is 125 with one line"
outcomes=""
for _ in 1 2 3 4 5 6; do
    private_docker tag sandshim/sh:bookworm sandshim-faults/victim:1
    delay=0.$((RANDOM % 40))
    fault_run_in_background 20s 0 --image sandshim-faults/victim:1
    sleep "$delay"
    # The fault itself: the removal may lose the race to the run's create; the exit code is judged.
    private_docker rmi --force sandshim-faults/victim:1 >/dev/null 2>&1 || true
    rc=0
    wait "$BG_RUN" || rc=$?
    case $rc in
    42) expect_file_is "$OUT" "in sandbox" ;;
    125) expect_one_line "is not present" "$ERR" ;;
    *) fail "exit code $rc after removing the image at ${delay} s: $(cat "$ERR")" ;;
    esac
    outcomes+="${delay}s:$rc "
done
say "image removed at: $outcomes"
expect_not_on_host
expect_verified

# ---------------------------------------------------------------------------------------------
# The disk holding the audit database: a 2 MiB tmpfs of the suite's own.
mkdir -p "$SMALL_DISK"
mount -t tmpfs -o size=2m,mode=0755 sandshim-faults "$SMALL_DISK"
fill_disk() { dd if=/dev/zero of="$SMALL_DISK/filler" bs=4k 2>/dev/null || true; }
free_disk() { rm -f "$SMALL_DISK/filler"; }
with_small_db() { SANDSHIM_AUDIT_DB=$SMALL_DISK/audit.db "$@"; }
small_audit() { "$SANDSHIM_BIN" audit "$@" --db "$SMALL_DISK/audit.db"; }
AUDIT_DBS+=("$SMALL_DISK/audit.db")

check "audit: the disk is full before the run: 125, one line, nothing ran, the rows stay verifiable"
expect_exit 42 with_small_db fault_run 20s 0
fill_disk
containers_before=$(settled_private_containers | wc -l)
expect_exit 125 with_small_db fault_run 20s 0
expect_one_line "database or disk is full" "$ERR"
expect_contains "nothing ran (audit.required = true)" "$ERR"
expect_equal "$containers_before" "$(settled_private_containers | wc -l)" "containers in the engine"
small_audit verify >"$T/verify.out" || fail "verify failed on the full disk: $(cat "$T/verify.out")"
expect_contains "ok: 1 rows verified" "$T/verify.out"
expect_not_on_host

check "audit: a full disk with audit.required = false warns and runs (the control of the check above)"
printf '[audit]\nrequired = false\n' >"$T/unrequired.conf"
SANDSHIM_CONFIG=$T/unrequired.conf expect_exit 42 with_small_db fault_run 20s 0
expect_one_line "warning: running without audit" "$ERR"
free_disk

check "audit: the disk fills mid-run: the command's code, one line, the row is abandoned by gc, verify passes"
SANDSHIM_AUDIT_DB=$SMALL_DISK/audit.db fault_run_in_background 20s 3
until [[ $(small_audit sql "SELECT count(*) AS n FROM runs WHERE status = 'running'" --jsonl 2>/dev/null) == '{"n":1}' ]]; do
    sleep 0.05
done
fill_disk
rc=0
wait "$BG_RUN" || rc=$?
expect_equal 42 "$rc" "exit code (the command ran)"
expect_one_line "could not complete the audit row" "$ERR"
small_audit verify >/dev/null || fail "verify failed with the row left running"
free_disk
with_small_db expect_exit 0 sandshim gc
expect_contains "marked 1 abandoned run(s)" "$OUT"
small_audit verify >"$T/verify.out" || fail "verify failed after gc: $(cat "$T/verify.out")"
expect_contains "ok: 2 rows verified" "$T/verify.out"

# ---------------------------------------------------------------------------------------------
# Holds the database's write lock for SECONDS (in the background); waits until it is held.
hold_db_lock() { # SECONDS
    rm -f "$T/locked"
    "$HOST_PY" - "$SANDSHIM_AUDIT_DB" "$1" "$T/locked" <<'EOF' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
open(sys.argv[3], "w").close()
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
EOF
    LOCK_PID=$!
    BG_PIDS+=("$LOCK_PID")
    until [[ -e $T/locked ]]; do sleep 0.05; done
}

check "audit: the database is locked past the busy timeout: 125 after ~5 s, one line, nothing ran"
rows_before=$(run_count)
hold_db_lock 9
expect_exit 125 fault_run 20s 0
wait "$LOCK_PID"
((ELAPSED_MS >= 4500)) || fail "refused after ${ELAPSED_MS} ms, before the 5 s busy timeout"
expect_one_line "database is locked" "$ERR"
expect_contains "busy timeout (5000 ms)" "$ERR"
expect_contains "nothing ran" "$ERR"
expect_equal "$rows_before" "$(run_count)" "rows"
expect_not_on_host
expect_verified

check "audit: a lock released within the busy timeout only delays the run (the control)"
hold_db_lock 2
expect_exit 42 fault_run 20s 0
wait "$LOCK_PID"
expect_run last error 42

# ---------------------------------------------------------------------------------------------
check "audit: a corrupt database file: 125, one line, the file left untouched"
head -c 65536 /dev/urandom >"$T/corrupt.db"
digest=$(sha256sum <"$T/corrupt.db")
SANDSHIM_AUDIT_DB=$T/corrupt.db expect_exit 125 fault_run 20s 0
expect_one_line "file is not a database" "$ERR"
expect_contains "mv $T/corrupt.db $T/corrupt.db.corrupt" "$ERR"
expect_equal "$digest" "$(sha256sum <"$T/corrupt.db")" "the corrupt file's digest"
expect_not_on_host

check "audit: a truncated database file: 125, one line; once moved aside, runs are recorded and verify"
cp "$SANDSHIM_AUDIT_DB" "$T/truncated.db"
"$HOST_PY" -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' "$T/truncated.db"
truncate -s $(($(stat -c %s "$T/truncated.db") / 2)) "$T/truncated.db"
SANDSHIM_AUDIT_DB=$T/truncated.db expect_exit 125 fault_run 20s 0
expect_one_line "database disk image is malformed" "$ERR"
expect_not_on_host
mv "$T/truncated.db" "$T/truncated.db.corrupt" # the fix the line gives
AUDIT_DBS+=("$T/truncated.db")
SANDSHIM_AUDIT_DB=$T/truncated.db expect_exit 42 fault_run 20s 0
"$SANDSHIM_BIN" audit verify --db "$T/truncated.db" >"$T/verify.out" || fail "verify: $(cat "$T/verify.out")"
expect_contains "ok: 1 rows verified" "$T/verify.out"

# ---------------------------------------------------------------------------------------------
check "policy: the config changes during a run: the run keeps the policy it started with"
export SANDSHIM_CONFIG=$T/changing.conf
printf '[sandbox]\nmemory = 256m\n' >"$SANDSHIM_CONFIG"
start_fault_run 20s 3
printf '[sandbox]\nmemory = a lot\n' >"$SANDSHIM_CONFIG"
wait_bg_run
expect_equal 42 "$BG_RC" "exit code of the run that started with the valid config"
expect_run "$RUN_ID" error 42
expect_contains "--memory=268435456" <(audit_field "$RUN_ID" engine_args)
check "policy: the run after the change reads the new, invalid config: 125, one line naming file:line"
expect_exit 125 fault_run 20s 0
expect_one_line "$SANDSHIM_CONFIG:2" "$ERR"
expect_run last refused 125
printf '[sandbox]\nmemory = 128m\n' >"$SANDSHIM_CONFIG"
expect_exit 42 fault_run 20s 0
expect_contains "--memory=134217728" <(audit_field last engine_args)
unset SANDSHIM_CONFIG
expect_not_on_host
expect_verified

# ---------------------------------------------------------------------------------------------
check "shim: SIGINT, SIGTERM, SIGHUP and SIGKILL at random points of runs (seed $SEED)"
# The run sleeps 1 s under a 6 s deadline; a signal lands at 0-3 s: before the container starts,
# while it starts, while it runs, or after it ended. Valid outcomes: 128+N (the row is absent,
# killed, or complete with the command's own outcome when the signal came after it ended;
# `running` only after SIGKILL, for gc to mark abandoned), or 42 when the run ended first.
declare -A signal_number=([INT]=2 [TERM]=15 [HUP]=1 [KILL]=9)
summary=""
for round in $(seq 12); do
    sig=$(printf '%s\n' INT TERM HUP KILL | sed -n "$((round % 4 + 1))p")
    delay_ms=$((RANDOM % 3000))
    rows_before=$(run_count)
    started=$EPOCHREALTIME
    # Background commands of a script start with SIGINT ignored: give the shim the default.
    "$HOST_PY" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$SANDSHIM_BIN" run --timeout 6s -- sh -c "$FAULT_SCRIPT" sh "$MARKER" 1 \
        >"$OUT" 2>"$ERR" </dev/null &
    run_pid=$!
    sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
    # The run may have ended already (exit 42, allowed below): the exit code is what is judged.
    kill "-$sig" "$run_pid" 2>/dev/null || true
    rc=0
    wait "$run_pid" 2>/dev/null || rc=$? # (no "Killed" notice from bash)
    expected=$((128 + signal_number[$sig]))
    [[ $rc == "$expected" || $rc == 42 ]] || fail "SIG$sig at ${delay_ms} ms: exit $rc, expected $expected or 42; stderr: $(cat "$ERR")"
    if [[ $rc == 42 ]]; then
        expect_run last error 42
    elif [[ $sig != KILL && $(run_count) != "$rows_before" ]]; then
        status=$(audit_field last status)
        [[ $status != running ]] || fail "SIG$sig at ${delay_ms} ms left its row running"
        [[ $status == killed || $status == error ]] || fail "SIG$sig at ${delay_ms} ms: status $status"
    fi
    # No container outlives the deadline (6 s) by more than the guardian's grace.
    if [[ $(run_count) != "$rows_before" ]]; then
        id=$(last_run_id)
        remaining=$((6 + 7 - $(ms_since "$started") / 1000))
        expect_container_gone_within "sandshim-$id" $((remaining > 0 ? remaining : 0))
    fi
    summary+="SIG$sig@${delay_ms}ms:$rc "
done
say "signals: $summary"
expect_exit 0 sandshim gc
expect_equal '{"n":0}' "$(audit_cmd sql "SELECT count(*) AS n FROM runs WHERE status = 'running'" --jsonl)" "rows left running after gc"
expect_not_on_host
expect_verified

suite_done
