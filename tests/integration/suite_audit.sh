#!/usr/bin/env bash
# sandshim-test-warm: docker
# The audit database with real containers: every kind of run leaves exactly one complete row
# with the right status and exit code; 64 concurrent shim runs leave 64 complete rows and a chain
# that verifies; an edit or a deletion with the sqlite3 CLI makes `verify` fail naming the row;
# an unusable database (read-only, corrupt) refuses the run with 125 and nothing runs, unless
# audit.required = false.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Warm variant: the 64 concurrent shim runs outnumber the pool, and may go cold.
WARM_COLD_OK="invoked_as = 'sh'"

mkdir -p "$WS/rw" "$T/outside"
chmod 777 "$WS/rw"
echo 'print("outside")' >"$T/outside/x.py"
marker=$WS/rw/marker

running_rows() {
    audit_cmd sql "SELECT count(*) AS n FROM runs WHERE status = 'running'" --jsonl |
        "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)["n"])'
}

# expect_one_new_row BEFORE STATUS EXIT: exactly one row more, complete, with STATUS and EXIT.
expect_one_new_row() {
    expect_equal $(($1 + 1)) "$(run_count)" "rows after one run"
    expect_run last "$2" "$3"
    expect_equal 0 "$(running_rows)" "rows still marked running"
}

check "ok: one complete row, exit 0"
before=$(run_count)
expect_exit 0 sandshim run -- sh -c true
expect_one_new_row "$before" ok 0
expect_equal direct "$(audit_field last via)" "via of a run the caller's sandshim ran"

check "error: one complete row with the command's exit code and its exact argv"
before=$(run_count)
expect_exit 42 sandshim run -- sh -c 'echo out; echo err >&2; exit 42' 'two words' 'ünïcødé'
expect_one_new_row "$before" error 42
expect_equal '["sh", "-c", "echo out; echo err >&2; exit 42", "two words", "\u00fcn\u00efc\u00f8d\u00e9"]' \
    "$(audit_field last argv)" argv
expect_equal out "$(audit_field last stdout_tail)" stdout_tail
expect_equal err "$(audit_field last stderr_tail)" stderr_tail
error_run=$(last_run_id)

check "timeout: one complete row, exit 124"
before=$(run_count)
expect_exit 124 sandshim run --timeout 1s -- sh -c 'sleep 5'
expect_one_new_row "$before" timeout 124

check "oom: one complete row, exit 137"
before=$(run_count)
expect_exit 137 sandshim run --memory 64m -- python -c 'block = b"\x01" * (200 << 20)'
if skip_check_on podman "podman 4.3 with runc on cgroup v1 reports no OOM kill (no oom event, State.OOMKilled false), so the run is status killed without the memory line"; then
    expect_one_new_row "$before" killed 137
else
    expect_one_new_row "$before" oom 137
fi

check "killed (SIGTERM to the shim): one complete row, exit 143"
before=$(run_count)
"$SANDSHIM_BIN" run --timeout 20s -- sh -c 'sleep 30' >/dev/null 2>&1 </dev/null &
shim=$!
BG_PIDS+=("$shim")
wait_for_running_container 20 >/dev/null
kill -TERM "$shim"
rc=0
wait "$shim" || rc=$?
expect_equal 143 "$rc" "exit code after SIGTERM"
expect_one_new_row "$before" killed 143

check "refused (a path outside the workspace): one complete row, exit 125"
before=$(run_count)
expect_exit 125 sandshim run -- python "$T/outside/x.py"
expect_one_new_row "$before" refused 125

check "engine_error (engine not installed): one complete row, exit 125"
before=$(run_count)
printf '[engine]\nsearch_path = /nonexistent\n' >"$T/no-engine.conf"
SANDSHIM_CONFIG=$T/no-engine.conf expect_exit 125 sandshim run -- sh -c 'exit 42'
expect_one_new_row "$before" engine_error 125

check "64 concurrent shim runs: 64 complete rows, none running, verify passes"
mkdir -p "$T/shims" "$T/concurrent"
ln -s "$SANDSHIM_BIN" "$T/shims/sh"
printf '[sandbox]\ntimeout = 180s\n' >"$T/slow-machine.conf" # 64 containers on two busy cores
before=$(run_count)
started=$EPOCHREALTIME
pids=()
for i in $(seq 64); do
    SANDSHIM_CONFIG=$T/slow-machine.conf "$T/shims/sh" -c true \
        >"$T/concurrent/$i.out" 2>"$T/concurrent/$i.err" </dev/null &
    pids+=($!)
done
BG_PIDS+=("${pids[@]}")
failed=0
for i in "${!pids[@]}"; do
    rc=0
    wait "${pids[i]}" || rc=$?
    if ((rc != 0)); then
        failed=$((failed + 1))
        say "run $((i + 1)) exited $rc: $(head -c 500 "$T/concurrent/$((i + 1)).err")"
    fi
done
say "64 concurrent runs took $(($(ms_since "$started") / 1000)) s"
expect_equal 0 "$failed" "failed concurrent runs"
expect_equal $((before + 64)) "$(run_count)" "rows after 64 concurrent runs"
expect_equal 64 "$(audit_cmd sql "SELECT count(*) AS n FROM runs WHERE invoked_as = 'sh' AND status = 'ok' AND exit_code = 0 AND end_ms IS NOT NULL AND chain_seq IS NOT NULL" --jsonl |
    "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)["n"])')" "complete ok rows of the sh shim"
expect_equal 0 "$(running_rows)" "rows still marked running"
expect_exit 0 sandshim audit verify --json
expect_contains '"ok": true' "$OUT"
expect_contains "\"rows_checked\": $((before + 64))" "$OUT"

check "editing a row with the sqlite3 CLI makes verify fail (exit 1) naming that row"
cp_db=$T/deleted.db
sqlite3 "$SANDSHIM_AUDIT_DB" ".backup '$cp_db'"
sqlite3 "$SANDSHIM_AUDIT_DB" "UPDATE runs SET exit_code = 0 WHERE run_id = '$error_run'"
expect_exit 1 sandshim audit verify
cat "$ERR" >>"$OUT"
expect_contains "run \"$error_run\"" "$OUT"
expect_contains "was changed" "$OUT"

check "deleting a row with the sqlite3 CLI makes verify fail (exit 1) naming the gap"
expect_exit 0 sandshim audit verify --db "$cp_db"
seq=$(audit_field "$error_run" chain_seq)
sqlite3 "$cp_db" "DELETE FROM runs WHERE run_id = '$error_run'"
expect_exit 1 sandshim audit verify --db "$cp_db"
cat "$ERR" >>"$OUT"
expect_contains "chain positions $seq to $seq are missing" "$OUT"
expect_contains "rows were deleted" "$OUT"

# The database in a read-only place: a read-only bind mount in a private mount namespace as root
# (root writes through file modes), file modes otherwise.
readonly_db_run() { # CMD...
    if [[ $(id -u) == 0 ]]; then
        unshare --mount --propagation private -- bash -c \
            'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' \
            - "$T/state" "$@"
    else
        chmod 444 "$SANDSHIM_AUDIT_DB"*
        chmod 555 "$T/state"
        local rc=0
        "$@" || rc=$?
        chmod 755 "$T/state"
        chmod 644 "$SANDSHIM_AUDIT_DB"*
        return "$rc"
    fi
}

check "a read-only audit database refuses the run (125, one line), nothing runs, nothing is written"
if [[ $(id -u) == 0 ]] && ! unshare --mount --propagation private true 2>/dev/null; then
    skip_or_fail "cannot make a private mount namespace (unshare --mount) for the read-only database"
fi
sqlite3 "$SANDSHIM_AUDIT_DB" "UPDATE runs SET exit_code = 42 WHERE run_id = '$error_run'" # undo the edit
expect_exit 0 sandshim audit verify
before=$(run_count)
expect_exit 125 readonly_db_run "$SANDSHIM_BIN" run --workspace rw -- sh -c 'touch rw/marker; exit 42'
expect_lines 1 "$ERR"
expect_contains "sandshim: audit database \"$SANDSHIM_AUDIT_DB\"" "$ERR"
expect_contains "nothing ran (audit.required = true)" "$ERR"
[[ ! -e $marker ]] || fail "the command ran without its audit row"
expect_equal "$before" "$(run_count)" "rows after a refused run"
expect_exit 0 sandshim audit verify

check "a corrupt audit database refuses the run (125) and is never overwritten"
printf 'this is not an sqlite database\n%.0s' $(seq 100) >"$T/corrupt.db"
sum=$(sha256sum <"$T/corrupt.db")
SANDSHIM_AUDIT_DB=$T/corrupt.db expect_exit 125 sandshim run --workspace rw -- sh -c 'touch rw/marker; exit 42'
expect_lines 1 "$ERR"
expect_contains "nothing ran" "$ERR"
[[ ! -e $marker ]] || fail "the command ran without its audit row"
expect_equal "$sum" "$(sha256sum <"$T/corrupt.db")" "corrupt database checksum"

check "control: with audit.required = false the same run warns and runs"
printf '[audit]\nrequired = false\n' >"$T/optional-audit.conf"
SANDSHIM_CONFIG=$T/optional-audit.conf SANDSHIM_AUDIT_DB=$T/corrupt.db \
    expect_exit 42 sandshim run --workspace rw -- sh -c 'touch rw/marker; exit 42'
expect_contains "warning: running without audit" "$ERR"
[[ -e $marker ]] || fail "the run did not happen"
rm -f "$marker"
expect_equal "$sum" "$(sha256sum <"$T/corrupt.db")" "corrupt database checksum"

suite_done
