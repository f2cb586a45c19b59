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

# payload AGENT EVENT COMMAND TOOL_USE_ID: the agent's documented payload shape (lib.sh).
payload() { agent_payload "$@" "$WS"; }

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

# Claude Code's session environment, as Claude Code lays it out: SessionStart hooks append to
# $CLAUDE_ENV_FILE, a file under <config>/session-env/<session>/ that is sourced before every
# Bash command.
export CLAUDE_CONFIG_DIR=$T/claude
readonly SESSION_ENV=$CLAUDE_CONFIG_DIR/session-env/e2e-claude
readonly ENV_FILE=$SESSION_ENV/sessionstart-hook-0.sh
mkdir -p "$SESSION_ENV"

check "claude: SessionStart puts the shim directory first on PATH through CLAUDE_ENV_FILE"
payload claude SessionStart "" "" >"$T/payload.json"
CLAUDE_ENV_FILE=$ENV_FILE EXPECT_STDIN=$T/payload.json expect_exit 0 sandshim hook --agent claude
expect_file_is "$OUT" ""
expect_contains "export PATH=$XDG_DATA_HOME/sandshim/bin:" "$ENV_FILE"
expect_contains "SANDSHIM_SESSION_ID=e2e-claude" "$ENV_FILE"

check "claude: PreToolUse says nothing, so Claude Code's own approval decides"
hook claude PreToolUse "$PROBE" toolu_e2e_claude
expect_file_is "$OUT" ""
hook claude PreToolUse "ls -la" toolu_e2e_ls
expect_file_is "$OUT" ""

check "claude: with the session's environment the python runs in the sandbox, exit code kept"
expect_exit 0 agent_bash ". '$ENV_FILE'; $PROBE"
expect_contains "host=sandbox" "$OUT"
expect_contains "after=42" "$OUT"

check "claude control: the same command without the session's environment runs on the host"
expect_exit 0 agent_bash "$PROBE"
expect_contains "host=$(hostname)" "$OUT"
expect_contains "after=42" "$OUT"

check "claude: PostToolUse completes the decision"
hook claude PostToolUse "$PROBE" toolu_e2e_claude
expect_file_is "$OUT" ""

check "audit: the run carries the session and is linked to its decision"
audit_json "$T/runs.json" list
run_id=$(json "$T/runs.json" '[r for r in d if r["agent_session"] == "e2e-claude"][0]["run_id"]')
expect_equal claude-code "$(json "$T/runs.json" '[r for r in d if r["agent_session"] == "e2e-claude"][0]["agent"]')" agent
expect_run "$run_id" error 42
sandshim audit show "$run_id" --json >"$T/show.json"
expect_equal toolu_e2e_claude "$(json "$T/show.json" 'd["decisions"][0]["tool_use_id"]')" "linked decision"
audit_json "$T/decisions.json" decisions --tool-use toolu_e2e_claude
expect_equal allow "$(json "$T/decisions.json" 'd[0]["decision"]')" decision
expect_equal nothing "$(json "$T/decisions.json" 'd[0]["answer"]')" answer
expect_equal default "$(json "$T/decisions.json" 'd[0]["permission_mode"]')" permission_mode
expect_equal shim-on-path "$(json "$T/decisions.json" 'd[0]["rule"]')" rule
expect_equal ran "$(json "$T/decisions.json" 'd[0]["outcome"]')" outcome
expect_equal 0 "$(json "$T/decisions.json" 'd[0]["exit_code"]')" "exit code PostToolUse reported"

check "claude: a session without the environment gets no rewrite; python is refused with what works"
payload claude PreToolUse "$PROBE" toolu_e2e_old >"$T/payload.json"
sed -i 's/"e2e-claude"/"e2e-old-session"/' "$T/payload.json"
EXPECT_STDIN=$T/payload.json expect_exit 0 sandshim hook --agent claude
expect_equal deny "$(json "$OUT" 'd["hookSpecificOutput"]["permissionDecision"]')" permissionDecision
json "$OUT" 'd["hookSpecificOutput"]["permissionDecisionReason"]' >"$T/reason"
expect_contains "sandshim run -- python3" "$T/reason"
suggested="cd sub && $SANDSHIM_BIN run -- python3 -c 'import socket; print(\"host=\" + socket.gethostname())'"
expect_exit 0 agent_bash "$suggested"
expect_contains "host=sandbox" "$OUT"

check "claude: an interpreter called by path is refused with what to run instead"
hook claude PreToolUse "$BYPASS" toolu_e2e_bypass
expect_equal deny "$(json "$OUT" 'd["hookSpecificOutput"]["permissionDecision"]')" permissionDecision
json "$OUT" 'd["hookSpecificOutput"]["permissionDecisionReason"]' >"$T/reason"
# The named command is the refused one's own, by name: with the shims first it runs sandboxed.
expect_contains "Instead: \`${BYPASS#/usr/bin/}\`" "$T/reason"
expect_exit 0 env PATH="$XDG_DATA_HOME/sandshim/bin:$PATH" bash -c "${BYPASS#/usr/bin/}"
expect_contains "host=sandbox" "$OUT"
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
