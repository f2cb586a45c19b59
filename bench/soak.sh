#!/usr/bin/env bash
# Soak: RUNS mixed runs (ok, error, timeout, oom, refused) through the real binary and engine,
# with MIN_PARALLEL to MAX_PARALLEL running at once (the target changes every 20 starts), into
# one fresh audit database. Prints the figures: runs completed, rows recorded, rows lost,
# containers leaked, exit codes and statuses against what each kind must give, the shims' peak
# RSS, p50/p95/p99 latency per kind, and `sandshim audit verify`. Timings are printed, never
# asserted; it exits 1 when a row is lost or left running, a container leaks, an exit code is
# wrong or verify fails (tests/integration/suite_soak.sh runs a reduced variant in CI).
#
#   bench/soak.sh                                    1,000 runs, 16 to 32 at once
#   RUNS=100 MIN_PARALLEL=16 MAX_PARALLEL=16 SEED=7 SANDSHIM_BIN=build/sandshim bench/soak.sh
#   BROKER=1 MIN_PARALLEL=32 bench/soak.sh           through a private broker (root): the runs
#                                                    are a user outside the engine's group's
#
# Everything (HOME, config, audit database, workspace) lives in a temporary directory, removed
# at the end unless KEEP=1. Runs use the engine the caller's configuration would (the shared
# local one by default); only containers named after this soak's own runs are ever removed.
set -euo pipefail

source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-1000}
min_parallel=${MIN_PARALLEL:-16}
max_parallel=${MAX_PARALLEL:-32}
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
bin=$(readlink -f "${SANDSHIM_BIN:-$source_dir/build/sandshim}")
docker=$(command -v docker)
python=$(command -v /usr/bin/python3 || command -v python3)
[[ -x $bin ]] || {
    echo "soak.sh: no sandshim binary at $bin (build it, or set SANDSHIM_BIN)" >&2
    exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/sandshim-soak.XXXXXX")
chmod 755 "$work" # the sandbox user must be able to reach the workspace
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_STATE_HOME=$work/home/.local/state
export SANDSHIM_AUDIT_DB=$work/audit.db LANG=C.UTF-8
unset SANDSHIM_CONFIG SANDSHIM_DRY_RUN SANDSHIM_AGENT SANDSHIM_SESSION_ID SANDSHIM_TOOL_USE_ID
mkdir -p "$HOME" "$work/ws" "$work/err"
git -C "$work/ws" init -q
client_prefix=() # what each run's `sandshim run` is started under (broker mode: the user, the socket)
audit_through=() # how `sandshim audit verify` reaches the database

# This soak's containers: one per recorded run id (the row is written before it starts).
soak_containers() { # [docker ps filter...]
    [[ -s $SANDSHIM_AUDIT_DB ]] || return 0
    "$docker" ps --all --filter label=org.sandshim.run "$@" --format '{{.Names}}' | sort -u |
        comm -12 - <("$bin" audit sql "SELECT 'sandshim-' || run_id AS n FROM runs" --jsonl |
            "$python" -c 'import json, sys
for line in sys.stdin: print(json.loads(line)["n"])' | sort -u)
}

# BROKER=1: a private broker as the system user `sandshim` (keyed, anchored audit, up to
# MAX_PARALLEL runs of one uid at once) and a user outside the engine's group as every run's caller.
start_soak_broker() {
    # shellcheck source=../install/lib/broker.sh
    . "$source_dir/install/lib/broker.sh"
    # shellcheck source=../install/lib/testuser.sh
    . "$source_dir/install/lib/testuser.sh"
    local user=sandshim-broker2-nd
    if ! broker_ensure_user >/dev/null || ! ensure_plain_test_user "$user" >/dev/null; then
        echo "soak.sh: BROKER=1 needs root (users, the broker)" >&2
        exit 2
    fi
    install -d -m 755 "$work/bin"
    install -m 755 "$bin" "$work/bin/sandshim"
    broker_install_companions "$bin" "$work/bin"
    bin=$work/bin/sandshim
    broker_write_system_config "$work/etc/config" "$work/broker" "$work/anchors" \
        $'[users]\nmay_set = sandbox.timeout<=10m\n'
    broker_start "$bin" "$work/run/broker.sock" "$work/broker" --system-config "$work/etc/config" \
        --max-runs-per-user "$max_parallel" || exit 2
    trap 'broker_stop_if_started; cleanup' EXIT
    chown -R "$user:" "$HOME" "$work/ws"
    client_prefix=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups
        env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 SANDSHIM_BROKER=required
        SANDSHIM_BROKER_SOCKET="$work/run/broker.sock")
    audit_through=(env XDG_CONFIG_HOME="$work/none" SANDSHIM_BROKER=required
        SANDSHIM_BROKER_SOCKET="$work/run/broker.sock")
    export SANDSHIM_AUDIT_DB=$work/broker/audit.db # read directly by root for the counts
    echo "  through a private broker (pid $(broker_started_pid)); runs as $user (not in the engine's group)"
}

cleanup() {
    local left
    left=$(soak_containers 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -z $left ]] || "$docker" rm --force $left >/dev/null 2>&1 || true
    if [[ -n ${KEEP:-} ]]; then
        echo "soak.sh: kept $work" >&2
    else
        chattr -a "$work/anchors/anchor.log" 2>/dev/null || true # BROKER=1: append-only
        rm -rf "$work"
    fi
}
trap cleanup EXIT
if [[ ${BROKER:-0} == 1 ]]; then
    start_soak_broker
fi

echo "== soak: $runs runs, $min_parallel to $max_parallel at once, seed $seed"
echo "  machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo "  binary: $bin"

# The driver: starts the runs, keeps the target number running, samples each shim's peak RSS
# (VmHWM of the shim alone: wait4 would add the engine client it waited for), times each run.
cd "$work/ws"
"$python" - "$bin" "$runs" "$min_parallel" "$max_parallel" "$seed" "$work" "${client_prefix[@]}" <<'EOF' | tee "$work/driver.out"
import json, os, random, statistics, subprocess, sys, time

bin, runs, lo, hi, seed, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
prefix = sys.argv[7:]
rng = random.Random(seed)

# kind: (weight, argv after `sandshim run`, expected exit code, expected audit status). Only the
# timeout kind may meet its deadline: the others get 120 s, since at 32 runs at once on a small
# machine the engine alone can take longer than the default 30 s to start a container.
KINDS = {
    "ok": (55, ["--timeout", "120s", "--", "sh", "-c",
                "echo ok; head -c 2000 /dev/zero | tr '\\0' x; echo"], 0, "ok"),
    "error": (20, ["--timeout", "120s", "--", "sh", "-c", "echo failing >&2; exit 3"], 3, "error"),
    "timeout": (10, ["--timeout", "2s", "--", "sh", "-c", "sleep 30"], 124, "timeout"),
    "oom": (10, ["--timeout", "120s", "--memory", "32m", "--", "sh", "-c",
                 "x=$(head -c 256m /dev/zero | tr '\\0' x); echo ${#x}"], 137, "oom"),
    "refused": (5, ["--", "soak-command-without-image"], 125, "refused"),
}
names = list(KINDS)
weights = [KINDS[k][0] for k in names]


def peak_rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


running = {}  # pid -> record
done = []
target = rng.randint(lo, hi)
started = 0
busy_time = 0.0
max_running = 0
t0 = last = time.monotonic()
last_sample = 0.0
while started < runs or running:
    if started < runs and len(running) < target:
        kind = rng.choices(names, weights)[0]
        err = open(f"{work}/err/{started}.txt", "wb")
        proc = subprocess.Popen(prefix + [bin, "run"] + KINDS[kind][1], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
        err.close()
        running[proc.pid] = {"i": started, "kind": kind, "proc": proc, "t": time.monotonic(), "rss": 0}
        started += 1
        if started % 20 == 0:
            target = rng.randint(lo, hi)
        max_running = max(max_running, len(running))
        continue
    now = time.monotonic()
    busy_time += len(running) * (now - last)
    last = now
    if now - last_sample > 0.1:
        for pid, rec in running.items():
            rec["rss"] = max(rec["rss"], peak_rss_kb(pid))
        last_sample = now
    for pid, rec in list(running.items()):
        rc = rec["proc"].poll()
        if rc is not None:
            rec["latency"] = time.monotonic() - rec["t"]
            rec["rc"] = rc
            done.append(rec)
            del running[pid]
    time.sleep(0.01)
wall = time.monotonic() - t0


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else 0


print(f"  wall time {wall:.1f} s, {len(done) / wall:.2f} runs/s; running at once: "
      f"mean {busy_time / wall:.1f}, max {max_running}")
print(f"  {'kind':8} {'runs':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  exit codes")
for kind in names + ["all"]:
    recs = [r for r in done if kind in ("all", r["kind"])]
    lat = [r["latency"] * 1000 for r in recs]
    codes = {}
    for r in recs:
        codes[r["rc"]] = codes.get(r["rc"], 0) + 1
    print(f"  {kind:8} {len(recs):5d} {pct(lat, 50):8.0f} {pct(lat, 95):8.0f} {pct(lat, 99):8.0f}  "
          + (" ".join(f"{c}:{n}" for c, n in sorted(codes.items())) if kind != "all" else ""))
rss = [r["rss"] for r in done if r["rss"]]
print(f"  shim peak RSS (VmHWM, sampled every 100 ms): max {max(rss) / 1024:.1f} MiB, "
      f"median {statistics.median(rss) / 1024:.1f} MiB over {len(rss)} sampled shims")
handed_over = 0
for r in done:
    with open(f"{work}/err/{r['i']}.txt", "rb") as f:
        handed_over += b"did not confirm the container's removal" in f.read()
print(f"  runs whose container removal was left to the guardian (engine slower than 5 s): "
      f"{handed_over}")
wrong = [r for r in done if r["rc"] != KINDS[r["kind"]][2]]
for r in wrong[:10]:
    with open(f"{work}/err/{r['i']}.txt", "rb") as f:
        err = f.read().decode(errors="replace").strip().replace("\n", " | ")[:300]
    print(f"  WRONG EXIT: run {r['i']} ({r['kind']}) exited {r['rc']}, expected "
          f"{KINDS[r['kind']][2]}: {err}")
expected_status = {}
for r in done:
    s = KINDS[r["kind"]][3]
    expected_status[s] = expected_status.get(s, 0) + 1
with open(f"{work}/summary.json", "w") as f:
    json.dump({"completed": len(done), "wrong_exit": len(wrong), "expected_status": expected_status}, f)
EOF

summary() { "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/summary.json" "$1"; }
completed=$(summary completed)
wrong_exit=$(summary wrong_exit)
failed=0

# A cold run returns at its container's exit and the engine removes it just after, so what
# counts when the last shim exited is a container still running; anything left after the
# guardians' window is a leak.
left_at_end=$(soak_containers --filter status=running | grep -c . || true)
sleep 10 # the longest guardian window after a deadline: 5 s grace + 2 s, with margin
leaked=$(soak_containers | grep -c . || true)
rows=$("$bin" audit sql "SELECT count(*) AS n FROM runs" --jsonl | "$python" -c 'import json, sys; print(json.load(sys.stdin)["n"])')
unfinished=$("$bin" audit sql "SELECT count(*) AS n FROM runs WHERE status = 'running'" --jsonl |
    "$python" -c 'import json, sys; print(json.load(sys.stdin)["n"])')
statuses=$("$bin" audit sql "SELECT status, count(*) AS n FROM runs GROUP BY status ORDER BY status" --jsonl |
    "$python" -c 'import json, sys
print(" ".join("%s:%s" % (r["status"], r["n"]) for r in map(json.loads, sys.stdin)))')
expected=$("$python" -c 'import json, sys
e = json.load(open(sys.argv[1]))["expected_status"]
print(" ".join(f"{k}:{v}" for k, v in sorted(e.items())))' "$work/summary.json")
verify_rc=0
verify=$("${audit_through[@]}" "$bin" audit verify 2>&1) || verify_rc=$?

echo "== results"
echo "  runs completed:       $completed of $runs"
echo "  rows recorded:        $rows"
echo "  rows lost:            $((runs - rows))"
echo "  rows left running:    $unfinished"
echo "  containers leaked:    $leaked (running when the last shim exited: $left_at_end)"
echo "  wrong exit codes:     $wrong_exit"
echo "  audit statuses:       $statuses"
echo "  expected statuses:    $expected"
echo "  audit verify:         $verify"
echo "  load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

((completed == runs)) || failed=1
((rows == runs)) || failed=1
((unfinished == 0)) || failed=1
((leaked == 0 && left_at_end == 0)) || failed=1
((wrong_exit == 0)) || failed=1
((verify_rc == 0)) || failed=1
[[ $statuses == "$expected" ]] || echo "  note: statuses differ from the kinds' (see above)"
if ((failed)); then
    echo "soak.sh: FAILED (seed $seed; rerun with SEED=$seed KEEP=1 to inspect)" >&2
    exit 1
fi
echo "soak.sh: passed"
