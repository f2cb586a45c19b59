#!/usr/bin/env bash
# A pool of engines (engine.endpoints): the shared local engine and a remote one (remote_engine.sh:
# a second dockerd in namespaces of the suite's own, over TLS). Placement spreads runs over both
# under engine.max_runs; the soak runs SANDSHIM_POOL_SOAK_RUNS (200) short python runs, 4 at
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

trap 'remote_engine_stop; cleanup' EXIT
[[ $ENGINE == docker ]] || skip_or_fail "the engine pool's remote engine is a dockerd"
remote_engine_start sandshim/python:bookworm

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

check "runs are placed on both engines, and each row names the one it ran on"
seen=""
for _ in $(seq 12); do
    expect_exit 0 sandshim run -- python -c 'print("placed")'
    expect_contains "placed" "$OUT"
    [[ $seen == *"$(last_engine)"* ]] || seen+=" $(last_engine)"
    [[ $seen == *"@$LOCAL"* && $seen == *"@$REMOTE_ENGINE_ENDPOINT"* ]] && break
done
[[ $seen == *"docker@$LOCAL"* && $seen == *"docker@$REMOTE_ENGINE_ENDPOINT"* ]] ||
    fail "12 runs were placed on only:$seen"

check "with every engine at engine.max_runs a run waits engine.place_wait, then is refused with one line"
pool_config 1 1s
for _ in 1 2; do
    "$SANDSHIM_BIN" run -- python -c 'import time; time.sleep(6)' >/dev/null 2>&1 &
    BG_PIDS+=("$!")
done
running_rows() {
    audit_cmd sql "SELECT count(*) AS n FROM runs WHERE status = 'running'" --jsonl |
        "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)["n"])'
}
until (($(running_rows) == 2)); do sleep 0.2; done
expect_exit 125 sandshim run -- python -c 'print("never")'
expect_file_is "$ERR" "sandshim: every engine of engine.endpoints that answers runs engine.max_runs = 1 runs from this machine, still after 1s (engine.place_wait); nothing ran"
expect_run last engine_error 125
((ELAPSED_MS >= 1000)) || fail "the refusal came after ${ELAPSED_MS} ms, before engine.place_wait"
wait "${BG_PIDS[@]}"
BG_PIDS=()
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

# doctor's engines line. Its other checks (shims on PATH, agent hooks) are not this suite's, so
# its exit code is not asserted here (suite_doctor.sh does).
doctor_lines() {
    "$SANDSHIM_BIN" doctor >"$OUT" 2>"$ERR" || true
    say "doctor: $(grep engines "$OUT")"
}

check "doctor: the killed engine does not answer (a warning with the fix), the local one does"
doctor_lines
expect_contains "warn  engines  1 of 2 answer (engine.max_runs = 3): $LOCAL 0 in flight; $REMOTE_ENGINE_ENDPOINT does not answer: " "$OUT"
expect_contains "fix: start the engines that do not answer, or take them out of engine.endpoints" "$OUT"

check "the engine is taken back once it answers again (after the retry interval)"
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
doctor_lines
expect_contains "ok    engines  2 of 2 answer (engine.max_runs = 3): $LOCAL 0 in flight; $REMOTE_ENGINE_ENDPOINT 0 in flight" "$OUT"
left_until=$((SECONDS + 15))
while [[ -n $(remote_docker ps -aq --filter label=org.sandshim.run) ]] && ((SECONDS < left_until)); do
    sleep 0.5
done
say "containers of the killed runs left on the restarted engine after its guardians' removals: $(remote_docker ps -aq --filter label=org.sandshim.run | wc -l)"

suite_done
