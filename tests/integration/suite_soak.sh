#!/usr/bin/env bash
# sandshim-test-engines: docker
# sandshim-test-alone: yes  # loads the whole machine or times it: no other test runs beside it in CI
# (docker only: bench/soak.sh counts leaked containers in docker's container list.)
#
# The reduced soak: 100 mixed runs (ok, error, timeout, oom, refused), 16 at once, through the
# real binary and engine into one audit database, then 50 through a private broker as a user
# outside the engine's group (SANDSHIM_SOAK_BROKER_RUNS). Fails when a row is lost or left running, a
# container leaks, an exit code is wrong or `sandshim audit verify` fails; its timings are
# printed, never asserted. SANDSHIM_SOAK_RUNS changes the number of runs.
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Runs bench/soak.sh with VARIABLES... and checks its figures: no row lost, no container leaked,
# verify passes. KEEP: the soak's directory stays inside this suite's, removed only on a pass.
soak_passes() { # VARIABLE=VALUE...
    local rc=0
    env TMPDIR="$T" KEEP=1 MIN_PARALLEL=16 MAX_PARALLEL=16 SANDSHIM_BIN="$SANDSHIM_BIN" "$@" \
        bash "$SOURCE_DIR/bench/soak.sh" >"$OUT" 2>"$ERR" || rc=$?
    cat "$OUT" >&2
    [[ $rc == 0 ]] || fail "bench/soak.sh $* failed (exit $rc): $(cat "$ERR")"
    expect_contains "rows lost:            0" "$OUT"
    expect_contains "containers leaked:    0 (running when the last shim exited: 0)" "$OUT"
    expect_contains "audit verify:         ok: " "$OUT"
}

check "soak: ${SANDSHIM_SOAK_RUNS:-100} mixed runs, 16 at once: no row lost, no container leaked, verify passes"
soak_passes RUNS="${SANDSHIM_SOAK_RUNS:-100}"

check "soak through the broker: ${SANDSHIM_SOAK_BROKER_RUNS:-50} mixed runs, 16 at once, as a user outside the engine's group"
[[ $(id -u) == 0 ]] || skip_or_fail "the broker soak needs root (users, the broker)"
soak_passes BROKER=1 RUNS="${SANDSHIM_SOAK_BROKER_RUNS:-50}"
expect_contains "through a private broker" "$OUT"

suite_done
