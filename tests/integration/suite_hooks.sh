#!/usr/bin/env bash
# Agent hooks end to end: a Claude Code or Codex PreToolUse payload goes through `sandshim hook`,
# the command it answers with runs under bash exactly as the agent's Bash tool would run it, and
# the audit shows that the python inside it ran in a container, linked to the decision by the
# tool-use id. Each property is shown in both directions: the hooked command runs sandboxed and
# the same command unhooked runs on the host; a bypass is refused and, unhooked, would have run
# on the host.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

sandshim install >/dev/null
mkdir -p "$WS/sub"

# Prints the hostname it runs on, exits 42; the shell goes on and reports that exit code, so the
# command as a whole exits 0 and its output shows both.
readonly PROBE="cd sub && python3 -c 'import socket, sys; print(\"host=\" + socket.gethostname()); sys.exit(42)'; echo \"after=\$?\""
readonly BYPASS="/usr/bin/python3 -c 'import socket; print(\"host=\" + socket.gethostname())'"

# payload AGENT EVENT COMMAND TOOL_USE_ID: the agent's documented payload shape.
payload() {
    "$HOST_PY" - "$@" "$WS" <<'EOF'
import json, sys
agent, event, command, tool_use_id, cwd = sys.argv[1:6]
body = {"session_id": "e2e-" + agent, "transcript_path": None, "cwd": cwd,
        "permission_mode": "default", "hook_event_name": event, "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": tool_use_id}
if agent == "claude":
    body["transcript_path"] = "/tmp/transcript.jsonl"
    body["tool_input"]["description"] = "e2e"
else:
    body.update({"turn_id": "turn-1", "model": "gpt-5-codex"})
if event == "PostToolUse":
    body["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
print(json.dumps(body))
EOF
}

# hook AGENT EVENT COMMAND TOOL_USE_ID [OPTIONS...]: the hook's answer in $OUT.
hook() {
    local agent=$1 event=$2 command=$3 tool_use_id=$4
    shift 4
    payload "$agent" "$event" "$command" "$tool_use_id" >"$T/payload.json"
    EXPECT_STDIN=$T/payload.json expect_exit 0 sandshim hook --agent "$agent" "$@"
}

# json FILE EXPRESSION: a value out of a JSON file (`d` is the document).
json() {
    "$HOST_PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"
}

# Runs a command the way the agent's Bash tool does: bash -c, in the session's cwd.
agent_bash() { bash -c "$1"; }

audit_json() { # FILE audit-subcommand args...
    local file=$1
    shift
    sandshim audit "$@" --json >"$file"
}

check "claude: the rewritten command runs python in the sandbox and keeps its exit code"
hook claude PreToolUse "$PROBE" toolu_e2e_claude --rewrite-approval allow
expect_equal allow "$(json "$OUT" 'd["hookSpecificOutput"]["permissionDecision"]')" permissionDecision
expect_equal e2e "$(json "$OUT" 'd["hookSpecificOutput"]["updatedInput"]["description"]')" "echoed description"
rewritten=$(json "$OUT" 'd["hookSpecificOutput"]["updatedInput"]["command"]')
expect_exit 0 agent_bash "$rewritten"
expect_contains "host=sandbox" "$OUT"
expect_contains "after=42" "$OUT"

check "claude control: the same command without the hook runs on the host"
expect_exit 0 agent_bash "$PROBE"
expect_contains "host=$(hostname)" "$OUT"
expect_contains "after=42" "$OUT"

check "claude: PostToolUse completes the decision"
hook claude PostToolUse "$PROBE" toolu_e2e_claude
expect_file_is "$OUT" "{}"

check "audit: the run is linked to the decision by the tool-use id"
audit_json "$T/runs.json" list --tool-use toolu_e2e_claude
expect_equal 1 "$(json "$T/runs.json" 'len(d)')" "runs of toolu_e2e_claude"
expect_equal claude-code "$(json "$T/runs.json" 'd[0]["agent"]')" agent
expect_equal e2e-claude "$(json "$T/runs.json" 'd[0]["agent_session"]')" agent_session
expect_equal python3 "$(json "$T/runs.json" 'd[0]["invoked_as"]')" invoked_as
expect_equal true "$(json "$T/runs.json" '"--hostname=sandbox" in d[0]["engine_args"]')" "ran in a container"
expect_run "$(json "$T/runs.json" 'd[0]["run_id"]')" error 42
audit_json "$T/decisions.json" decisions --tool-use toolu_e2e_claude
expect_equal 1 "$(json "$T/decisions.json" 'len(d)')" "decisions of toolu_e2e_claude"
expect_equal rewrite "$(json "$T/decisions.json" 'd[0]["decision"]')" decision
expect_equal path-rewrite "$(json "$T/decisions.json" 'd[0]["rule"]')" rule
expect_equal "$PROBE" "$(json "$T/decisions.json" 'd[0]["original_command"]')" original_command
expect_equal 0 "$(json "$T/decisions.json" 'd[0]["exit_code"]')" "exit code PostToolUse reported"

check "claude: an interpreter called by path is refused with what to run instead"
hook claude PreToolUse "$BYPASS" toolu_e2e_bypass
expect_equal deny "$(json "$OUT" 'd["hookSpecificOutput"]["permissionDecision"]')" permissionDecision
json "$OUT" 'd["hookSpecificOutput"]["permissionDecisionReason"]' >"$T/reason"
expect_contains "Instead: `python3 …`" "$T/reason"
audit_json "$T/decisions.json" decisions --tool-use toolu_e2e_bypass
expect_equal interpreter-by-path "$(json "$T/decisions.json" 'd[0]["rule"]')" rule
audit_json "$T/runs.json" list --tool-use toolu_e2e_bypass
expect_equal 0 "$(json "$T/runs.json" 'len(d)')" "runs of the refused command"

check "bypass control: unhooked, the same command would have run on the host"
expect_exit 0 agent_bash "$BYPASS"
expect_file_is "$OUT" "host=$(hostname)"

check "codex: the answer holds only what Codex's schema accepts, and the python runs sandboxed"
hook codex PreToolUse "$PROBE" call_e2e_codex
expect_equal '["hookSpecificOutput"]' "$(json "$OUT" 'list(d)')" "top-level keys"
expect_equal '["hookEventName", "permissionDecision", "updatedInput"]' \
    "$(json "$OUT" 'sorted(d["hookSpecificOutput"])')" "hookSpecificOutput keys"
rewritten=$(json "$OUT" 'd["hookSpecificOutput"]["updatedInput"]["command"]')
expect_exit 0 agent_bash "$rewritten"
expect_contains "host=sandbox" "$OUT"
audit_json "$T/runs.json" list --tool-use call_e2e_codex
expect_equal codex "$(json "$T/runs.json" 'd[0]["agent"]')" agent

check "a payload sandshim cannot read blocks the command (exit 2, reason on stderr)"
printf 'not json' >"$T/garbage"
EXPECT_STDIN=$T/garbage expect_exit 2 sandshim hook --agent claude
expect_contains "not a JSON object" "$ERR"

suite_done
