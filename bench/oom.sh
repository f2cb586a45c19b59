#!/usr/bin/env bash
# OOM detection under load: RUNS runs that allocate past their memory cap, PARALLEL at once,
# through the real binary and engine. Every one of them is OOM-killed, so every row should say
# `oom`; the figure is how many do (the rest say `killed`: the OOM went unseen). Prints the
# detection rate and the p50/p95 latency; asserts nothing (timings and rates are figures).
#
#   bench/oom.sh                                  60 runs, 12 at once
#   RUNS=60 PARALLEL=16 NOISE=4 SANDSHIM_BIN=build/sandshim bench/oom.sh
#
# NOISE=N adds N loops that create and remove a container each, as other users of a shared
# engine do: every one of their events also passes through the engine's event buffer, which
# keeps the last 256 for a client that asks afterwards. NOISE_KIND=volume makes them create and
# remove volumes through the API socket from one python process each instead (no client process
# per event: hundreds of events a second), so that buffer turns over within a run.
#
# HOME, config, audit database and workspace live in a temporary directory, removed at the end.
set -euo pipefail

source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-60}
parallel=${PARALLEL:-12}
noise=${NOISE:-0}
noise_kind=${NOISE_KIND:-container}
docker=$(command -v docker)
bin=$(readlink -f "${SANDSHIM_BIN:-$source_dir/build/sandshim}")
[[ -x $bin ]] || {
    echo "oom.sh: no sandshim binary at $bin (build it, or set SANDSHIM_BIN)" >&2
    exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/sandshim-oom.XXXXXX")
chmod 755 "$work"
noise_pids=()
cleanup() {
    local pid
    for pid in "${noise_pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    "$docker" ps -aq --filter "label=org.sandshim.bench-oom-noise=$$" | xargs -r "$docker" rm -f >/dev/null 2>&1 || true
    "$docker" volume ls -q --filter "label=org.sandshim.bench-oom-noise=$$" | xargs -r "$docker" volume rm -f >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_STATE_HOME=$work/home/.local/state
export SANDSHIM_AUDIT_DB=$work/audit.db LANG=C.UTF-8
unset SANDSHIM_CONFIG SANDSHIM_DRY_RUN
mkdir -p "$HOME" "$work/ws"
git -C "$work/ws" init -q
cd "$work/ws"

one_run() {
    "$bin" run --memory 32m -- python -c 'b = b"\x01" * (256 << 20)' >/dev/null 2>&1 || true
}
export -f one_run
export bin

noise_loop() {
    local id
    if [[ $noise_kind == volume ]]; then
        exec python3 - "$$" <<'PY'
import http.client, json, socket, sys
class Engine(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect("/var/run/docker.sock")
def call(method, path, body=None):
    engine = Engine("docker")
    engine.request(method, path, body=body, headers={"Content-Type": "application/json"})
    answer = engine.getresponse().read()
    engine.close()
    return answer
label = json.dumps({"Labels": {"org.sandshim.bench-oom-noise": sys.argv[1]}})
while True:
    name = json.loads(call("POST", "/volumes/create", label))["Name"]
    call("DELETE", "/volumes/" + name)
PY
    fi
    while :; do
        id=$("$docker" create --label "org.sandshim.bench-oom-noise=$$" sandshim/sh:bookworm true 2>/dev/null) &&
            "$docker" rm -f "$id" >/dev/null 2>&1 || true
    done
}
for ((i = 0; i < noise; i++)); do
    noise_loop &
    noise_pids+=($!)
done

"$docker" events --format '{{.Actor.Attributes.name}} {{.Action}}' >"$work/events" 2>/dev/null &
noise_pids+=($!)

started=$EPOCHREALTIME
seq "$runs" | xargs -P "$parallel" -I{} bash -c one_run
elapsed_ms=$(((${EPOCHREALTIME/./} - ${started/./}) / 1000))

"$bin" audit sql "SELECT status, count(*) AS n FROM runs GROUP BY status" --jsonl >"$work/statuses"
oom=$(grep -o '"status":"oom","n":[0-9]*' "$work/statuses" | grep -o '[0-9]*$' || echo 0)
total=$("$bin" audit sql "SELECT count(*) AS n FROM runs" --jsonl | grep -o '[0-9]*')
"$bin" audit sql "SELECT duration_ms FROM runs ORDER BY duration_ms" --jsonl | grep -o '[0-9]*' >"$work/durations"
p50=$(sed -n "$(((total + 1) / 2))p" "$work/durations")
p95=$(sed -n "$(((total * 95 + 99) / 100))p" "$work/durations")
events=$(wc -l <"$work/events")
echo "oom.sh: $runs runs, $parallel at once, noise $noise $noise_kind, ${elapsed_ms} ms, $((events * 1000 / (elapsed_ms > 0 ? elapsed_ms : 1))) engine events/s: oom $oom/$total ($((oom * 100 / (total > 0 ? total : 1))) %), run p50 ${p50} ms p95 ${p95} ms"
tr '\n' ' ' <"$work/statuses"
echo
# Each run the audit calls `killed`: did the engine emit an oom event for it at all (a live
# `docker events` watched the whole bench), and in which order among its events?
"$bin" audit sql "SELECT container_name FROM runs WHERE status = 'killed'" --jsonl |
    grep -o 'sandshim-[0-9a-f]*' | while read -r name; do
    echo "missed $name: engine events: $(grep "^$name " "$work/events" | cut -d' ' -f2 | tr '\n' ' ')"
done
