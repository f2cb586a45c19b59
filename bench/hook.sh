#!/usr/bin/env bash
# What one Claude Code PreToolUse hook call costs the agent: `sandshim hook --agent claude`
# (parse the payload, analyse the command, decide, write the audit record, answer), next to a
# minimal Python hook doing the same round trip (json in, a decision, one SQLite insert in WAL
# mode, json out). p50/p95 of the wall time and of the CPU time (user + system, which hardly
# depends on the machine's load) of each, and the ratios. Asserts nothing.
#
#   bench/hook.sh [BUILD_DIR]               (default: build)
#   N=200 SANDSHIM_BIN=build/sandshim bench/hook.sh
#
# HOME, XDG dirs and the audit database live in a fresh directory.
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
timer=${SPAWN_TIMER:-$build/bench/sandshim_spawn_timer}
runs=${N:-200}
batch=10
python=${PYTHON:-/usr/bin/python3} # the interpreter itself, not a version manager's shim

for tool in "$bin" "$timer"; do
  if [[ ! -x $tool ]]; then
    echo "hook.sh: $tool is missing: build the sandshim and sandshim_spawn_timer targets first" >&2
    exit 2
  fi
done
timer=$(realpath "$timer")

work=$(mktemp -d /tmp/sandshim-hook-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/data SANDSHIM_AUDIT_DB=$work/audit.db HOOK_DB=$work/python-hook.db
unset SANDSHIM_CONFIG SANDSHIM_LOG
mkdir -p "$HOME" "$work/project"
"$bin" install > /dev/null # path mode rewrites only when the shims are installed

# What Claude Code sends before a Bash call (docs: PreToolUse input).
cat > "$work/payload.json" << EOF
{"session_id":"bench-session","transcript_path":"$work/transcript.jsonl","cwd":"$work/project",
 "permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",
 "tool_input":{"command":"cd src && python3 -m pytest -q tests/ | tail -n 20","description":"Run the tests"},
 "tool_use_id":"toolu_01BenchmarkPayload"}
EOF

# The baseline: the least a Python hook can do for the same answer.
cat > "$work/hook.py" << 'EOF'
import json, os, sqlite3, sys, time

event = json.load(sys.stdin)
command = event["tool_input"]["command"]
words = command.replace("|", " ").replace(";", " ").split()
rewrite = any(word in ("python", "python3", "node", "sh") for word in words)
answer = dict(event["tool_input"], command="export PATH=/shims:$PATH; " + command)
db = sqlite3.connect(os.environ["HOOK_DB"])
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE IF NOT EXISTS decisions (time_ms INTEGER, session_id TEXT,"
           " tool_use_id TEXT, command TEXT, decision TEXT, rewritten TEXT)")
with db:
    db.execute("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
               (int(time.time() * 1000), event["session_id"], event["tool_use_id"], command,
                "rewrite" if rewrite else "allow", answer["command"]))
json.dump({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                  "updatedInput": answer}}, sys.stdout)
EOF

# Both answers are checked once, so the timing is of hooks that work.
"$bin" hook --agent claude < "$work/payload.json" | grep -q '"updatedInput"'
"$python" "$work/hook.py" < "$work/payload.json" | grep -q '"updatedInput"'

# p50 and p95 (nearest rank) of column COLUMN of FILE.
percentiles() {
  awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
    printf "%.2f %.2f", v[int((NR * 50 + 99) / 100)], v[int((NR * 95 + 99) / 100)] }'
}

ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'
}

echo "== this machine"
echo "  $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr), $("$python" -V)"
echo "  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  $runs calls each, alternating in batches of $batch, after $batch warm-up calls each"
"$timer" "$batch" "$work/payload.json" "$bin" hook --agent claude > /dev/null
"$timer" "$batch" "$work/payload.json" "$python" "$work/hook.py" > /dev/null
: > "$work/sandshim.ms"
: > "$work/python.ms"
for ((done = 0; done < runs; done += batch)); do
  "$timer" "$batch" "$work/payload.json" "$bin" hook --agent claude >> "$work/sandshim.ms"
  "$timer" "$batch" "$work/payload.json" "$python" "$work/hook.py" >> "$work/python.ms"
done
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== one PreToolUse call, ms: wall time, and CPU time (user + system)"
printf '  %-32s %8s %8s %8s %8s\n' hook "wall p50" "wall p95" "cpu p50" "cpu p95"
declare -A figures
for who in sandshim python; do
  read -r w50 w95 <<< "$(percentiles "$work/$who.ms" 1)"
  read -r c50 c95 <<< "$(percentiles "$work/$who.ms" 2)"
  figures[$who]="$w50 $w95 $c50 $c95"
done
read -r sw50 sw95 sc50 sc95 <<< "${figures[sandshim]}"
read -r pw50 pw95 pc50 pc95 <<< "${figures[python]}"
printf '  %-32s %8s %8s %8s %8s\n' "sandshim hook --agent claude" "$sw50" "$sw95" "$sc50" "$sc95"
printf '  %-32s %8s %8s %8s %8s\n' "python3 hook.py (json + sqlite)" "$pw50" "$pw95" "$pc50" "$pc95"
printf '  %-32s %8s %8s %8s %8s\n' "ratio sandshim / python" "$(ratio "$sw50" "$pw50")" \
  "$(ratio "$sw95" "$pw95")" "$(ratio "$sc50" "$pc50")" "$(ratio "$sc95" "$pc95")"
echo "  audit rows written: $("$bin" audit sql "SELECT count(*) FROM decisions" --csv | tail -1)"
