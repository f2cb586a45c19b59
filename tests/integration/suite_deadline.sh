#!/usr/bin/env bash
# sandshim-test-warm: docker
# sandshim-test-client: docker
# Deadlines and signals: a busy loop is killed at the deadline (124, one line, audit `timeout`),
# signals to the shim stop the container (128+N, audit `killed`), a SIGKILLed shim leaves no
# container past its deadline, and `sandshim gc` removes expired containers and marks the dead
# shim's row abandoned. After each, no container of this suite may be left.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Runs a busy loop under --timeout 2s and checks exit, time, message, audit row, container.
expect_deadline_kill() { # PROGRAM CMD...
    local program=$1 id
    shift
    expect_exit 124 sandshim run --timeout 2s -- "$program" "$@"
    # The upper bound holds the engine's own removal time: under CI's load (three suites and a
    # sanitizer build) a warm python run's kill once took 4.8 s after its deadline. The outcome
    # lines below say that the shim's deadline, not the guardian's backstop, ended it.
    ((ELAPSED_MS >= 2000 && ELAPSED_MS <= 10000)) || fail "ended after ${ELAPSED_MS} ms, expected 2-10 s"
    expect_deadline_outcome "$program" 2s
    id=$(last_run_id)
    expect_run "$id" timeout 124
    assert_run_container_gone "sandshim-$id" "the deadline"
    say "$program busy loop ended after ${ELAPSED_MS} ms"
}

# Starts a run in the background; sets BG_RUN (the shim's pid) and RUN_ID once its container runs.
start_background_run() { # SANDSHIM-RUN-ARGS...
    "$SANDSHIM_BIN" run "$@" >"$T/bg.out" 2>"$T/bg.err" </dev/null &
    BG_RUN=$!
    BG_PIDS+=("$BG_RUN")
    RUN_ID=$(wait_for_running_container 20)
}

check "a busy loop as the container's main program (sh) is killed at the deadline"
expect_deadline_kill sh -c 'while :; do :; done'

check "a busy loop as the container's main program (python) is killed at the deadline"
expect_deadline_kill python -c 'while True: pass'

check "SIGTERM to the shim: exit 143, one line, container gone, audit killed"
start_background_run --timeout 20s -- sh -c 'sleep 30'
kill -TERM "$BG_RUN"
rc=0
wait "$BG_RUN" || rc=$?
expect_equal 143 "$rc" "exit code after SIGTERM"
expect_file_is "$T/bg.err" "sandshim: stopped by SIGTERM; the container was stopped"
assert_run_container_gone "sandshim-$RUN_ID" SIGTERM
expect_run "$RUN_ID" killed 143
expect_equal 15 "$(audit_field "$RUN_ID" signal)" "signal"

check "SIGINT to the shim of a program that ignores it: escalated, exit 130, container gone"
start_background_run --timeout 20s -- sh -c 'trap "" INT; sleep 30'
started=$EPOCHREALTIME
kill -INT "$BG_RUN"
rc=0
wait "$BG_RUN" || rc=$?
expect_equal 130 "$rc" "exit code after SIGINT"
((($(ms_since "$started")) < 10000)) || fail "the shim took $(ms_since "$started") ms to stop the container"
assert_run_container_gone "sandshim-$RUN_ID" SIGINT
expect_run "$RUN_ID" killed 130

check "SIGKILL to the shim: the container is gone by its deadline (8 s)"
run_started=$EPOCHREALTIME
start_background_run --timeout 8s -- sh -c 'sleep 60'
# The deadline counts from the run's start, which a loaded engine may take seconds to reach
# running from: the kill comes right after the container is seen running, not at a fixed time.
container_exists "sandshim-$RUN_ID" ||
    fail "control: the container is not running before the kill ($(ms_since "$run_started") ms after the start)"
kill -KILL "$BG_RUN"
killed=$EPOCHREALTIME
shim_rc=0
wait "$BG_RUN" 2>/dev/null || shim_rc=$?
expect_equal 137 "$shim_rc" "exit status of the SIGKILLed shim"
gone_ms=""
while (($(ms_since "$run_started") < 8000 + 5000)); do
    if ! container_exists "sandshim-$RUN_ID"; then
        gone_ms=$(ms_since "$killed")
        break
    fi
    sleep 0.2
done
[[ -n $gone_ms ]] || fail "container sandshim-$RUN_ID still exists 5 s after its deadline"
say "container gone ${gone_ms} ms after the SIGKILL ($(($(ms_since "$run_started") - gone_ms)) ms after the run started; deadline 8000 ms)"
expect_equal running "$(audit_field "$RUN_ID" status)" "status of the dead shim's row before gc"

check "SIGKILL to the shim while the container is still starting: none is left after the deadline (3 s)"
if [[ -n ${SANDSHIM_TEST_POOL:-} ]]; then
    say "SKIP in the warm variant: ${CHECK}: a warm run's container runs before the run starts (SIGKILL of a warm run is the check above)"
else
    run_started=$EPOCHREALTIME
    "$SANDSHIM_BIN" run --timeout 3s -- sh -c 'sleep 60' >/dev/null 2>&1 </dev/null &
    BG_RUN=$!
    BG_PIDS+=("$BG_RUN")
    early_id=""
    while [[ -z $early_id ]] && (($(ms_since "$run_started") < 10000)); do
        [[ ! -s $SANDSHIM_AUDIT_DB ]] ||
            early_id=$(audit_cmd sql "SELECT run_id FROM runs WHERE status = 'running' AND run_id != '$RUN_ID'" --jsonl |
                "$HOST_PY" -c 'import json, sys; print("".join(json.loads(l)["run_id"] for l in sys.stdin))')
        [[ -n $early_id ]] || sleep 0.02
    done
    [[ -n $early_id ]] || fail "the run never recorded its row"
    kill -KILL "$BG_RUN"
    killed=$EPOCHREALTIME
    shim_rc=0
    wait "$BG_RUN" 2>/dev/null || shim_rc=$?
    expect_equal 137 "$shim_rc" "exit status of the SIGKILLed shim"
    last_seen=never
    while (($(ms_since "$run_started") < 3000 + 5000)); do
        ! container_exists "sandshim-$early_id" || last_seen="$(ms_since "$run_started") ms"
        sleep 0.2
    done
    ! container_exists "sandshim-$early_id" || fail "container sandshim-$early_id outlived its deadline by 5 s"
    say "shim killed $(($(ms_since "$run_started") - $(ms_since "$killed"))) ms after the start; its container last seen at: $last_seen (deadline 3000 ms)"
fi

check "sandshim gc: removes an expired labelled container, keeps a live one, marks the dead shim's row abandoned"
expired=sandshim-itest-gc-expired-$$
live=sandshim-itest-gc-live-$$
EXTRA_CONTAINERS+=("$expired" "$live")
"$DOCKER" run -d --network none --pull=never --log-driver=none \
    "${PLAIN_RUN_LIMITS[@]}" --name "$expired" \
    --label org.sandshim.run="itest-$$-expired" --label org.sandshim.deadline=1 \
    sandshim/sh:bookworm sleep 60 >/dev/null
"$DOCKER" run -d --network none --pull=never --log-driver=none \
    "${PLAIN_RUN_LIMITS[@]}" --name "$live" \
    --label org.sandshim.run="itest-$$-live" --label org.sandshim.deadline=$(($(date +%s) + 600)) \
    sandshim/sh:bookworm sleep 60 >/dev/null
expect_exit 0 sandshim gc
expect_contains "expired container(s)" "$OUT"
! container_exists "$expired" || fail "gc left the expired container $expired"
container_exists "$live" || fail "gc removed $live, whose deadline has not passed"
"$DOCKER" rm --force "$live" >/dev/null
expect_equal abandoned "$(audit_field "$RUN_ID" status)" "status of the dead shim's row after gc"

suite_done
