#!/usr/bin/env bash
# A pool of engines (engine.endpoints): the shared local engine and two remote ones (remote_engine.sh:
# dockerds in namespaces of the suite's own, over TLS, each with its own CA and data root).
# Placement spreads runs under engine.max_runs; each entry's own tls_cert_path=, max_runs= and
# label= are proven on the second remote engine, with runs pinned to it by engine.require_labels
# (its row names it; at its cap a pinned run waits, then is refused naming it, while an unpinned
# run goes elsewhere). The soak, over the local and the first remote engine, runs SANDSHIM_POOL_SOAK_RUNS (200) short python runs, 4 at
# once, and kills the remote engine by its pid half-way. Every run then has exactly one complete
# audit row naming its engine; runs in flight on the killed engine fail with 125 and a line
# naming it, never run again elsewhere; every run placed after the kill went to the local
# engine; no container is left on the surviving engine; the killed engine is skipped, and taken
# back once it answers again. The figures are printed, never asserted beyond these counts.
# sandshim-test-engines: docker
# sandshim-test-alone: yes  # a soak: 4 runs at once and a second dockerd
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=remote_engine.sh
. "$SOURCE_DIR/tests/integration/remote_engine.sh"

# Stops the current remote engine, then each saved one (remote_engine_stop is idempotent).
stop_engines() {
    remote_engine_stop
    local name
    for name in A B; do
        remote_engine_use "$name"
        remote_engine_stop
    done
}
trap 'rc=$?; stop_engines; (exit $rc); cleanup' EXIT # cleanup reads the suite's exit code
[[ $ENGINE == docker ]] || skip_or_fail "the engine pool's remote engines are dockerds"
engines_started=$EPOCHREALTIME
remote_engine_start sandshim/python:bookworm
remote_engine_save A
# shellcheck disable=SC2034 # read by remote_engine_start
REMOTE_ENGINE_INDEX=1
remote_engine_start sandshim/python:bookworm
remote_engine_save B
remote_engine_use A # the current one: the soak kills it
say "two remote engines started and loaded in $(ms_since "$engines_started") ms"
A=$REMOTE_ENGINE_A_ENDPOINT
B=$REMOTE_ENGINE_B_ENDPOINT

LOCAL=unix:///var/run/docker.sock
RUNS=${SANDSHIM_POOL_SOAK_RUNS:-200}
PARALLEL=4
KILL_AT=$((RUNS / 2))
SOAK=$T/soak
mkdir -p "$SOAK"
pool_config() { # MAX_RUNS PLACE_WAIT
    write_user_config <<EOF
endpoints = $LOCAL, $REMOTE_ENGINE_ENDPOINT
tls_cert_path = $REMOTE_ENGINE_CERTS
max_runs = $1
place_wait = $2
EOF
}
pool_config 3 60s

# The engine column of the newest row, as `docker` or `docker@ENDPOINT`.
last_engine() { audit_field last engine; }

running_rows() {
    audit_cmd sql "SELECT count(*) AS n FROM runs WHERE status = 'running'" --jsonl |
        "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)["n"])'
}

check "runs are placed on both engines (the list's first while both are idle, the other beside a run in flight there), and each row names the one it ran on"
expect_exit 0 sandshim run -- python -c 'print("placed")'
expect_contains "placed" "$OUT"
expect_equal "docker@$LOCAL" "$(last_engine)" "a run on idle engines"
"$SANDSHIM_BIN" run -- python -c 'import time; time.sleep(6)' >/dev/null 2>&1 &
BG_PIDS+=("$!")
until (($(running_rows) == 1)); do sleep 0.2; done
expect_exit 0 sandshim run -- python -c 'print("placed")'
expect_contains "placed" "$OUT"
expect_equal "docker@$REMOTE_ENGINE_ENDPOINT" "$(last_engine)" "a run beside one in flight on the first engine"
wait "${BG_PIDS[@]}"
BG_PIDS=()

check "with every engine at engine.max_runs a run waits engine.place_wait, then is refused with one line"
pool_config 1 1s
for _ in 1 2; do
    "$SANDSHIM_BIN" run -- python -c 'import time; time.sleep(6)' >/dev/null 2>&1 &
    BG_PIDS+=("$!")
done
until (($(running_rows) == 2)); do sleep 0.2; done
expect_exit 125 sandshim run -- python -c 'print("never")'
expect_file_is "$ERR" "sandshim: every engine of engine.endpoints that answers runs its max_runs from this machine ($LOCAL 1 of 1; $A 1 of 1), still after 1s (engine.place_wait); nothing ran"
expect_run last engine_error 125
((ELAPSED_MS >= 1000)) || fail "the refusal came after ${ELAPSED_MS} ms, before engine.place_wait"
wait "${BG_PIDS[@]}"
BG_PIDS=()

# The three engines, one line each: the second remote engine (B) with its own certificates, a
# cap of its own and a label. $1: engine.require_labels; $2: engine.place_wait.
three_config() { # REQUIRE_LABELS PLACE_WAIT
    write_user_config <<EOF
endpoints = $LOCAL
endpoints = $A tls_cert_path=$REMOTE_ENGINE_A_CERTS
endpoints = $B tls_cert_path=$REMOTE_ENGINE_B_CERTS max_runs=1 label=big
max_runs = 3
place_wait = $2
require_labels = $1
EOF
}

# doctor's engines line. Its other checks (shims on PATH, agent hooks) are not this suite's, so
# its exit code is not asserted here (suite_doctor.sh does).
doctor_lines() {
    "$SANDSHIM_BIN" doctor >"$OUT" 2>"$ERR" || true
    say "doctor: $(grep engines "$OUT")"
}

check "each engine's own certificates: with engine.tls_cert_path alone (the first remote engine's CA) the second does not answer; with its own tls_cert_path= it does"
write_user_config <<EOF
endpoints = $LOCAL, $A, $B max_runs=1 label=big
tls_cert_path = $REMOTE_ENGINE_A_CERTS
max_runs = 3
EOF
doctor_lines
expect_contains "warn  engines  2 of 3 answer (engine.max_runs = 3): docker@$LOCAL 0 in flight; docker@$A 0 in flight; docker@$B (max_runs=1 label=big) does not answer: " "$OUT"
three_config "" 60s
doctor_lines
expect_contains "ok    engines  3 of 3 answer (engine.max_runs = 3): docker@$LOCAL 0 in flight; docker@$A (tls_cert_path=$REMOTE_ENGINE_A_CERTS) 0 in flight; docker@$B (tls_cert_path=$REMOTE_ENGINE_B_CERTS max_runs=1 label=big) 0 in flight" "$OUT"

check "a bad entry of engine.endpoints refuses every run with one line naming the word"
write_user_config <<EOF
endpoints = $LOCAL
endpoints = $B max_runs=two
EOF
expect_exit 125 sandshim run -- python -c 'print("never")'
expect_lines 1 "$ERR"
expect_contains 'engine.endpoints = ' "$ERR"
expect_contains '"max_runs=two": expected a whole number from 0 to 4096' "$ERR"

check "runs pinned by engine.require_labels = big all go to the engine labelled big, and each row names it"
three_config big 60s
for _ in 1 2 3; do
    expect_exit 0 sandshim run -- python -c 'print("pinned")'
    expect_contains "pinned" "$OUT"
    expect_equal "docker@$B" "$(last_engine)" "the pinned run's engine"
done

check "the pinned engine at its own max_runs = 1: a pinned run waits engine.place_wait, then is refused with one line naming it; an unpinned run goes to another engine"
three_config big 1s
"$SANDSHIM_BIN" run -- python -c 'import time; time.sleep(6)' >/dev/null 2>&1 &
BG_PIDS+=("$!")
until (($(running_rows) == 1)); do sleep 0.2; done
expect_exit 125 sandshim run -- python -c 'print("never")'
expect_file_is "$ERR" "sandshim: every engine of engine.endpoints labelled big (engine.require_labels) that answers runs its max_runs from this machine ($B 1 of 1), still after 1s (engine.place_wait); nothing ran"
expect_run last engine_error 125
((ELAPSED_MS >= 1000)) || fail "the refusal came after ${ELAPSED_MS} ms, before engine.place_wait"
three_config "" 1s
expect_exit 0 sandshim run -- python -c 'print("elsewhere")'
[[ $(last_engine) != "docker@$B" ]] || fail "an unpinned run went to the engine at its max_runs"
say "the unpinned run went to $(last_engine)"
wait "${BG_PIDS[@]}"
BG_PIDS=()
audit_cmd sql "SELECT engine FROM runs WHERE argv LIKE '%sleep(6)%' ORDER BY start_ms DESC LIMIT 1" \
    --jsonl >"$T/held.jsonl"
expect_contains "\"docker@$B\"" "$T/held.jsonl"
pool_config 3 60s

# One soak run: its exit code and output in $SOAK/N.*; its argv names it (soak-N).
soak_run() { # N
    local rc=0
    "$SANDSHIM_BIN" run -- python -c 'import sys, time; time.sleep(0.3); print(sys.argv[1])' "soak-$1" \
        >"$SOAK/$1.out" 2>"$SOAK/$1.err" || rc=$?
    echo "$rc" >"$SOAK/$1.rc"
}

check "soak: $RUNS runs, $PARALLEL at once, the remote engine killed by its pid after run $KILL_AT"
started=$EPOCHREALTIME
for i in $(seq "$RUNS"); do
    while (($(jobs -rp | wc -l) >= PARALLEL)); do wait -n || true; done
    if ((i == KILL_AT)); then
        remote_engine_kill
        kill_ms=$(($(date +%s%3N)))
        say "killed the remote engine at run $i"
    fi
    soak_run "$i" &
done
wait
soak_ms=$(ms_since "$started")

# Every soak run against its one row: exactly one, complete, the shim's exit code, an engine of
# the pool; after the kill only the local engine; a failure only 125 on the killed engine.
audit_cmd sql "SELECT run_id, start_ms, end_ms, status, exit_code, engine, argv, message, chain_seq FROM runs" \
    --jsonl >"$T/rows.jsonl"
"$HOST_PY" - "$SOAK" "$RUNS" "$kill_ms" "docker@$LOCAL" "docker@$REMOTE_ENGINE_ENDPOINT" \
    "$T/rows.jsonl" "$soak_ms" <<'PY' >"$T/figures" || { cat "$T/figures" >&2; fail "the soak's rows: see above"; }
import json, sys, collections
soak, runs, kill_ms, local, remote, rows_path, soak_ms = sys.argv[1:]
runs, kill_ms = int(runs), int(kill_ms)
rows = collections.defaultdict(list)
for line in open(rows_path):
    row = json.loads(line)
    argv = row["argv"] if isinstance(row["argv"], list) else json.loads(row["argv"])
    if argv and argv[-1].startswith("soak-"):
        rows[int(argv[-1][5:])].append(row)
problems, count = [], collections.Counter()
for n in range(1, runs + 1):
    found, rc = rows.get(n, []), int(open(f"{soak}/{n}.rc").read())
    if len(found) != 1:
        problems.append(f"run {n}: {len(found)} rows"); continue
    row = found[0]
    after = row["start_ms"] > kill_ms
    if row["status"] == "running" or not row["end_ms"] or row["chain_seq"] is None:
        problems.append(f"run {n}: no outcome ({row['status']})"); count["no outcome"] += 1
    if row["exit_code"] != rc:
        problems.append(f"run {n}: exit {rc}, row says {row['exit_code']}")
    if row["engine"] not in (local, remote):
        problems.append(f"run {n}: engine {row['engine']!r}")
    if after and row["engine"] != local:
        problems.append(f"run {n}: placed on the killed engine after its death")
    if row["status"] == "ok":
        out = open(f"{soak}/{n}.out").read().strip()
        if out != f"soak-{n}":
            problems.append(f"run {n}: printed {out!r}")
    elif not (row["status"] == "engine_error" and rc == 125 and row["engine"] == remote
              and not after and remote in open(f"{soak}/{n}.err").read()):
        problems.append(f"run {n}: {row['status']} {rc} on {row['engine']}: {row['message']!r}")
    where = "local" if row["engine"] == local else "remote"
    count[f"{where} {'after' if after else 'before'} the kill {row['status']}"] += 1
print(f"soak: {runs} runs in {int(soak_ms) / 1000:.1f} s ({runs * 1000 / int(soak_ms):.1f} runs/s)")
print(f"rows: {sum(len(v) for v in rows.values())}, runs without an outcome: {count['no outcome']}")
for key in sorted(k for k in count if k != "no outcome"):
    print(f"  {key}: {count[key]}")
for problem in problems[:20]:
    print("problem:", problem)
sys.exit(1 if problems else 0)
PY
cat "$T/figures" >&2

check "a run that the killed engine failed says which engine, and that it ran nowhere else"
for f in "$SOAK"/*.rc; do
    [[ $(cat "$f") == 125 ]] || continue
    err=${f%.rc}.err
    expect_contains "on docker@$REMOTE_ENGINE_ENDPOINT of engine.endpoints, not run again on another engine" "$err"
    expect_lines 1 "$err"
    say "its line: $(cat "$err")"
    break
done

check "the killed engine is skipped while it stays down: runs go to the local engine"
compgen -G "$XDG_STATE_HOME/sandshim/engines/tcp*/down" >/dev/null ||
    fail "the killed engine was not marked down"
expect_exit 0 sandshim run -- python -c 'print("after")'
expect_equal "docker@$LOCAL" "$(last_engine)" "the engine after the kill"

check "doctor: the killed engine does not answer (a warning with the fix), the local one does"
doctor_lines
expect_contains "warn  engines  1 of 2 answer (engine.max_runs = 3): docker@$LOCAL 0 in flight; docker@$REMOTE_ENGINE_ENDPOINT does not answer: " "$OUT"
expect_contains "fix: start the engines that do not answer, or take them out of engine.endpoints" "$OUT"

check "the engine is taken back once it answers again (after the retry interval)"
# A run held on the local engine, so a run that may go to the remote one does (idle engines
# would all take the list's first).
"$SANDSHIM_BIN" run -- python -c 'import time; time.sleep(120)' >/dev/null 2>&1 &
held=$!
BG_PIDS+=("$held")
until (($(running_rows) == 1)); do sleep 0.2; done
restarted=$EPOCHREALTIME
remote_engine_launch
back=""
for _ in $(seq 40); do
    expect_exit 0 sandshim run -- python -c 'print("back")'
    [[ $(last_engine) == "docker@$REMOTE_ENGINE_ENDPOINT" ]] && back=yes && break
    sleep 0.5
done
[[ -n $back ]] || fail "no run went to the restarted engine"
say "a run went to the restarted engine $(ms_since "$restarted") ms after its restart"
kill -TERM "$held"
wait "$held" || true
doctor_lines
expect_contains "ok    engines  2 of 2 answer (engine.max_runs = 3): docker@$LOCAL 0 in flight; docker@$REMOTE_ENGINE_ENDPOINT 0 in flight" "$OUT"
left_until=$((SECONDS + 15))
while [[ -n $(remote_docker ps -aq --filter label=org.sandshim.run) ]] && ((SECONDS < left_until)); do
    sleep 0.5
done
say "containers of the killed runs left on the restarted engine after its guardians' removals: $(remote_docker ps -aq --filter label=org.sandshim.run | wc -l)"

suite_done
