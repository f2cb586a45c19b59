#!/usr/bin/env bash
# The everyday corpus (tests/data/hooks/everyday_corpus.txt) sent to the real `sandshim hook`
# process, per hook.mode and agent, in the corpus's fixture workspace (built by the unit-test
# binary, as the unit test builds it):
#  1. what each mode answers: allowed, rewritten, refused, and refused although harmless (a
#     refusal where the corpus expects the command to run, or marks it `false-deny`): the
#     false-refusal rate, measured on the process the agents start (each harmless refusal's
#     entry is named once per mode);
#  2. the hook's wall time per call over the corpus (Claude Code's payload, one call per entry),
#     p50 and p95 per mode, side by side with an empty hook (`cat`, which reads the payload and
#     answers nothing), one call of each in turn, and their ratio.
# Asserts nothing.
#
#   bench/corpus.sh [BUILD_DIR]                         (default: build)
#   AGENTS="claude codex gemini" TIMED_AGENT=claude bench/corpus.sh
#
# HOME, the XDG dirs, the config and the audit database live in a fresh directory.
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
units=$(realpath "${SANDSHIM_UNIT_TESTS:-$build/tests/sandshim_unit_tests}")
timer=$(realpath "${SPAWN_TIMER:-$build/bench/sandshim_spawn_timer}")
agents=${AGENTS:-claude codex gemini}
timed_agent=${TIMED_AGENT:-claude}
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}

for tool in "$bin" "$units" "$timer"; do
  if [[ ! -x $tool ]]; then
    echo "corpus.sh: $tool is missing: build sandshim, sandshim_unit_tests and sandshim_spawn_timer" >&2
    exit 2
  fi
done

# In the build directory, not /tmp: the fixture's system/ tree stands for /usr, and its scripts
# (Debian's mvn, bats, ldd) are system programs only where every directory above them is root's
# and closed to others (hooks/README.md, limit 7). Run as root from a build directory root owns
# to count them so; anywhere else they are followed like any script.
work=$(mktemp -d "$(realpath "$build")/corpus-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
SANDSHIM_CORPUS_WORKSPACE=$work/ws "$units" '[.corpus-workspace]' > "$work/workspace.txt"
project=$(sed -n 's/^project=//p' "$work/workspace.txt")
agent_path=$(sed -n 's/^path=//p' "$work/workspace.txt")
export HOME=$work/ws/home XDG_CONFIG_HOME=$work/ws/home/.config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/ws/home/.local/share SANDSHIM_AUDIT_DB=$work/audit.db
export CLAUDE_CONFIG_DIR=$HOME/.claude SANDSHIM_CONFIG=$work/config
unset SANDSHIM_LOG CLAUDE_CODE_SHELL_PREFIX
echo "hook.mode = path" > "$SANDSHIM_CONFIG"
"$bin" install > /dev/null # the shims, so that path mode has something to route to
shim_dir=$XDG_DATA_HOME/sandshim/bin

# Payloads: one per entry and agent, from the agent's captured payload; and the expectations.
"$python" - "$source_dir" "$project" "$work" "$agents" << 'EOF'
import json, os, sys
source, project, work, agents = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
entries, current = [], None
for line in open(f"{source}/tests/data/hooks/everyday_corpus.txt", encoding="utf-8"):
    line = line.rstrip("\n")
    if line.startswith("=== "):
        current = {"id": line[4:].split(" -- ")[0], "lines": [], "expect": {}}
        entries.append(current)
    elif current is None or line.startswith("###"):
        continue
    elif line.startswith(">>> "):
        key, _, value = line[4:].partition(": ")
        current["expect"][key] = value
    elif not current["expect"]:
        current["lines"].append(line)
captured = {"claude": "claude/captured_pre_tool_use.json", "codex": "codex/captured_pre_tool_use.json",
            "gemini": "gemini/captured_before_tool.json"}
os.makedirs(f"{work}/payloads")
for i, entry in enumerate(entries):
    command = "\n".join(entry["lines"]).rstrip("\n")
    for agent in agents:
        payload = json.load(open(f"{source}/tests/data/hooks/{captured[agent]}"))
        payload["tool_input"]["command"], payload["cwd"] = command, project
        json.dump(payload, open(f"{work}/payloads/{i:04d}-{agent}.json", "w"))
json.dump([{"id": e["id"], "expect": e["expect"]} for e in entries], open(f"{work}/entries.json", "w"))
EOF
count=$("$python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/entries.json")
session=$(jq -r .session_id "$source_dir/tests/data/hooks/claude/captured_pre_tool_use.json")

# As `sandshim install agent claude --mode MODE` leaves a session: the session environment puts
# the shims first on PATH; in wrap mode Claude Code's shell is sandshim's.
configure_mode() { # MODE
  echo "hook.mode = $1" > "$SANDSHIM_CONFIG"
  mkdir -p "$CLAUDE_CONFIG_DIR/session-env/$session"
  printf 'export PATH=%q:"$PATH"\n' "$shim_dir" \
    > "$CLAUDE_CONFIG_DIR/session-env/$session/sessionstart-hook-0.sh"
}

claude_prefix() { [[ $1 == wrap ]] && echo "$bin -c" || echo ""; }

echo "== this machine"
echo "  $(nproc) cores, $(uname -sr); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  $count commands; agents: $agents"

echo "== answers of the sandshim hook process (refused although harmless: the false-refusal rate)"
printf '  %-6s %-7s %8s %9s %8s %9s %18s\n' mode agent allowed rewritten refused "refused %" "harmless refused"
for mode in path deny wrap; do
  configure_mode "$mode"
  for agent in $agents; do
    : > "$work/answers-$mode-$agent.txt"
    prefix=$([[ $agent == claude ]] && claude_prefix "$mode" || echo "")
    for ((i = 0; i < count; i++)); do
      set +e
      out=$(CLAUDE_CODE_SHELL_PREFIX=$prefix PATH=$agent_path "$bin" hook --agent "$agent" \
        < "$work/payloads/$(printf %04d "$i")-$agent.json" 2> /dev/null)
      code=$?
      set -e
      if [[ $code -eq 2 ]] || grep -q '"deny"' <<< "$out"; then
        echo deny
      elif grep -q '"updatedInput"\|"tool_input"' <<< "$out"; then
        echo rewrite
      else
        echo allow
      fi >> "$work/answers-$mode-$agent.txt"
    done
    "$python" - "$work/entries.json" "$work/answers-$mode-$agent.txt" "$mode" "$agent" << 'EOF'
import json, sys
entries, answers = json.load(open(sys.argv[1])), open(sys.argv[2]).read().split()
mode, agent = sys.argv[3], sys.argv[4]
harmless = []
for entry, answer in zip(entries, answers):
    expect = entry["expect"].get(f"{mode}/{agent}", entry["expect"].get(mode, "ok"))
    if answer == "deny" and not expect.startswith("deny "):
        harmless.append(entry["id"])
n = len(answers)
refused = answers.count("deny")
print(f"  {mode:<6} {agent:<7} {answers.count('allow'):>8} {answers.count('rewrite'):>9} {refused:>8}"
      f" {100 * refused / n:>8.1f}% {len(harmless):>8} ({100 * len(harmless) / n:.1f} %)")
listed = f"{sys.argv[2]}.listed"
import os
previous = open(os.path.dirname(listed) + f"/listed-{mode}").read().split() if os.path.exists(
    os.path.dirname(listed) + f"/listed-{mode}") else []
for name in harmless:
    if name not in previous:
        print(f"           harmless refused: {name}")
open(os.path.dirname(listed) + f"/listed-{mode}", "w").write("\n".join(set(previous) | set(harmless)))
EOF
  done
done

# p50 and p95 (nearest rank) of column 1 of FILE.
percentiles() {
  sort -g "$1" | awk '{ v[NR] = $1 } END {
    printf "%.2f %.2f", v[int((NR * 50 + 99) / 100)], v[int((NR * 95 + 99) / 100)] }'
}

echo "== wall ms per call over the corpus ($timed_agent's payload; one call of each in turn)"
printf '  %-6s %10s %10s %12s %12s %10s\n' mode "hook p50" "hook p95" "empty p50" "empty p95" "p50 ratio"
for mode in path deny wrap; do
  configure_mode "$mode"
  prefix=$([[ $timed_agent == claude ]] && claude_prefix "$mode" || echo "")
  : > "$work/hook.ms"
  : > "$work/empty.ms"
  for ((i = 0; i < count; i++)); do
    payload=$work/payloads/$(printf %04d "$i")-$timed_agent.json
    CLAUDE_CODE_SHELL_PREFIX=$prefix PATH=$agent_path \
      "$timer" 1 "$payload" "$bin" hook --agent "$timed_agent" >> "$work/hook.ms" 2> /dev/null || true
    "$timer" 1 "$payload" /bin/cat >> "$work/empty.ms"
  done
  read -r h50 h95 <<< "$(percentiles "$work/hook.ms")"
  read -r e50 e95 <<< "$(percentiles "$work/empty.ms")"
  printf '  %-6s %10s %10s %12s %12s %9.2fx\n' "$mode" "$h50" "$h95" "$e50" "$e95" \
    "$(awk -v a="$h50" -v b="$e50" 'BEGIN { print a / b }')"
done
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg); target: hook p50 <= 5 ms"
