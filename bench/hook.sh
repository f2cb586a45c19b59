#!/usr/bin/env bash
# What sandshim's hooks cost an agent. Two parts:
#  1. One Claude Code PreToolUse call of `sandshim hook --agent claude` (parse the payload, analyse
#     the command, decide, write the audit record, answer), next to a minimal Python hook doing the
#     same round trip (json in, a decision, one SQLite insert in WAL mode, json out).
#  2. Per agent (Claude Code, Codex, Gemini CLI): after `sandshim install agent NAME` in a fresh
#     project, every hook process the agent starts for one successful Bash call (SessionStart and
#     the failure-only events excluded), each started exactly as the installed settings say
#     (`sh -c COMMAND`) and fed the payload that agent really sends (tests/data/hooks/AGENT/
#     captured_*.json, captured from the real CLIs by the agent suites); the p50 of its
#     PreToolUse call (target: 5 ms) and the sum per Bash call.
# p50/p95 of the wall time and of the CPU time (user + system, which hardly depends on the
# machine's load). Asserts nothing.
#
#   bench/hook.sh [BUILD_DIR]               (default: build)
#   N=200 AGENTS="claude codex gemini" SANDSHIM_BIN=build/sandshim bench/hook.sh
#
# HOME, XDG dirs and the audit database live in a fresh directory.
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
timer=${SPAWN_TIMER:-$build/bench/sandshim_spawn_timer}
runs=${N:-200}
agents=${AGENTS:-claude codex gemini}
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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

# Both are checked once, so the timing is of hooks that work (sandshim may answer nothing: no
# objection).
"$bin" hook --agent claude < "$work/payload.json" > /dev/null
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

# ---------------------------------------------------------------------------------------------
# Part 2: per agent, every hook process of one Bash call, as the installed settings start it.

# The settings file `sandshim install agent AGENT` writes in a project.
settings_file() {
  case $1 in
    claude) echo .claude/settings.json ;;
    codex) echo .codex/hooks.json ;;
    gemini) echo .gemini/settings.json ;;
  esac
}

shell_tool() { [[ $1 == gemini ]] && echo run_shell_command || echo Bash; }

# EVENT<TAB>COMMAND of each handler that fires on a successful call of TOOL (grouped layout).
hooks_for_call() { # SETTINGS TOOL
  "$python" - "$1" "$2" << 'EOF'
import json, re, sys
settings, tool = json.load(open(sys.argv[1])), sys.argv[2]
skip = {"SessionStart", "PostToolUseFailure", "PermissionDenied", "PermissionRequest"}
def matches(matcher):
    if matcher in ("", "*", None):
        return True
    if re.fullmatch(r"[A-Za-z0-9_|, -]*", matcher):
        return tool in re.split(r"[|,]\s*", matcher)
    return re.search(matcher, tool) is not None
for event, groups in (settings.get("hooks") or {}).items():
    if event in skip:
        continue
    for group in groups:
        if matches(group.get("matcher")):
            for handler in group.get("hooks", []):
                if handler.get("type", "command") == "command":
                    print(f"{event}\t{handler['command']}")
EOF
}

# The captured payload for EVENT of AGENT, its cwd and transcript moved into this bench's project.
payload_for() { # AGENT EVENT OUT
  local name
  name=$(sed -E 's/([a-z])([A-Z])/\1_\2/g' <<< "$2" | tr '[:upper:]' '[:lower:]')
  local captured=$source_dir/tests/data/hooks/$1/captured_$name.json
  [[ -r $captured ]] || return 1
  "$python" - "$captured" "$work/project" "$work/transcript.jsonl" > "$3" << 'EOF'
import json, sys
payload = json.load(open(sys.argv[1]))
payload["cwd"], payload["transcript_path"] = sys.argv[2], sys.argv[3]
print(json.dumps(payload))
EOF
}

echo "== per agent: every hook process of one successful Bash call, started as installed (sh -c)"
printf '  %-8s %-20s %8s %8s %8s %8s\n' agent event "wall p50" "wall p95" "cpu p50" "cpu p95"
git -C "$work/project" init -q
for agent in $agents; do
  (cd "$work/project" && "$bin" install agent "$agent" > /dev/null)
  total_wall=0 total_cpu=0
  while IFS=$'\t' read -r event command; do
    if ! payload_for "$agent" "$event" "$work/$agent-$event.json"; then
      printf '  %-8s %-20s %s\n' "$agent" "$event" "no captured payload: not measured"
      continue
    fi
    "$timer" "$batch" "$work/$agent-$event.json" /bin/sh -c "$command" > /dev/null
    "$timer" "$runs" "$work/$agent-$event.json" /bin/sh -c "$command" > "$work/$agent-$event.ms"
    read -r w50 w95 <<< "$(percentiles "$work/$agent-$event.ms" 1)"
    read -r c50 c95 <<< "$(percentiles "$work/$agent-$event.ms" 2)"
    printf '  %-8s %-20s %8s %8s %8s %8s\n' "$agent" "$event" "$w50" "$w95" "$c50" "$c95"
    total_wall=$(awk -v a="$total_wall" -v b="$w50" 'BEGIN { print a + b }')
    total_cpu=$(awk -v a="$total_cpu" -v b="$c50" 'BEGIN { print a + b }')
  done < <(hooks_for_call "$work/project/$(settings_file "$agent")" "$(shell_tool "$agent")")
  printf '  %-8s %-20s %8s %8s %8s\n' "$agent" "per Bash call (p50s)" "$total_wall" "" "$total_cpu"
  (cd "$work/project" && "$bin" install agent "$agent" --uninstall > /dev/null)
done
echo "  (target: a PreToolUse/BeforeTool call at p50 <= 5 ms wall)"
