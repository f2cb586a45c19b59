#!/usr/bin/env bash
# Claude Code, the real CLI, headless (`claude -p`, default permission mode) against the scripted
# model server, after `sandshim install` and `sandshim install agent claude` in a fresh project.
# The user's own allow rules admit python3, /usr/bin/python3, docker and file writes, so whatever
# is refused below was refused by sandshim; a command no rule admits is refused by Claude Code
# itself, which shows that sandshim approves nothing wholesale.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_agent claude
install_sandshim_for_agent claude
mkdir -p "$HOME/.claude"
cat >"$HOME/.claude/settings.json" <<JSON
{
  "permissions": {
    "additionalDirectories": ["/tmp"],
    "allow": ["Bash(python3:*)", "Bash(/usr/bin/python3:*)", "Bash(docker:*)", "Read", "Write",
      "Bash(test:*)", "Bash(echo:*)", "Bash(break)", "Bash(tr:*)", "Bash(hostname)", "Bash(id:*)",
      "Bash(node:*)", "Bash(npm test)", "Bash(npx:*)", "Bash(node_modules/.bin/probe-bin:*)",
      "Bash(./probe.py:*)"]
  }
}
JSON
touch "$WS/keep-me.txt"

# A loop appending to a file (no variable: Claude Code asks about those), then where it ran. Shell writes need the user's acceptEdits.
WRAP_MARKER=/tmp/sandshim-agents-wrap-marker.$$ # /tmp: the sandbox's own is writable
rm -f "$WRAP_MARKER"
WRAP_COMMAND="until test -s '$WRAP_MARKER'; do echo loop >> '$WRAP_MARKER' || break; done; tr '\\n' ' ' < '$WRAP_MARKER'; hostname; id -u"
standard_session "$(bash_step "rm -f keep-me.txt")"
check_standard_session

unlisted_command_refused_by_claude() {
    expect_result_not_contains "$FIRST_EXTRA_STEP" "sandshim:"
    [[ -e $WS/keep-me.txt ]] || fail "rm ran although no permission rule allows it"
}
run_check "claude: a command no rule allows is refused by Claude Code itself (nothing approved wholesale)" \
    unlisted_command_refused_by_claude

# The decision row of the call Claude Code refused is closed (by SessionEnd), not pending.
refused_call_row_closed() { expect_decision_closed "rm -f keep-me.txt"; }
run_check "claude: the audit row of a call Claude Code refused is closed" refused_call_row_closed

# SessionStart's env file ($CLAUDE_ENV_FILE) was written by the hook as the agent's user (not by
# the broker's), and puts the user's own shim directory on PATH.
env_file_written_as_caller() {
    local file found=0
    for file in "$HOME"/.claude/session-env/*/sessionstart-hook-*.sh; do
        [[ -e $file ]] || continue
        found=1
        expect_equal "$(id -u "${ND_USER:-root}")" "$(stat -c %u "$file")" "owner of $file"
        grep -qF "$XDG_DATA_HOME/sandshim/bin" "$file" || fail "$file does not put the shims on PATH: $(cat "$file")"
    done
    ((found)) || fail "no SessionStart env file under $HOME/.claude/session-env"
}
run_check "claude: SessionStart's env file is written as the agent's user, naming its shims" env_file_written_as_caller

CLAUDE_PERMISSION_MODE=acceptEdits
write_script "$(bash_step "$WRAP_COMMAND")"
run_agent
loop_ran_on_host_in_path_mode() {
    expect_result_contains 1 "loop $HOST_NAME"
    [[ -e $WRAP_MARKER ]] || fail "control: the loop's redirection did not write $WRAP_MARKER on the host"
    rm -f "$WRAP_MARKER"
}
run_check "claude control: in path mode the loop and its redirection run on the host" loop_ran_on_host_in_path_mode

# Wrap mode: Claude Code's own shell is `sandshim -c`, so the whole command runs in the wrap
# image; the hooks stay on the host (exec form) and say nothing, so the user's rules decide.
expect_exit 0 sandshim install agent claude --mode wrap
write_script "$(bash_step "$WRAP_COMMAND")" "$(bash_step "python3 -c '$PROBE_PY'")"
run_agent

whole_command_in_sandbox() {
    session_completed
    expect_result_contains 1 "loop sandbox"
    expect_result_contains 1 "$SANDBOX_UID"
    [[ ! -e $WRAP_MARKER ]] || fail "the loop's redirection wrote $WRAP_MARKER on the host"
    expect_result_contains 2 "probe host=sandbox uid=$SANDBOX_UID;"
    expect_decision "until test -s" allow
}
run_check "claude --mode wrap: a loop with a redirection runs whole in the sandbox, with no prompt added" \
    whole_command_in_sandbox
wrap_run_linked_by_tool_use() { expect_decision_linked_to_run "$PROBE_PY" 2 bash; }
run_check "claude --mode wrap: the run is linked to its decision by the tool-use id" \
    wrap_run_linked_by_tool_use
wrap_mode_doctor_ok() {
    expect_exit 0 sandshim doctor
    expect_contains "Claude Code calls them" "$OUT"
}
run_check "claude --mode wrap: doctor finds the shell prefix set" wrap_mode_doctor_ok

rm -f "$WRAP_MARKER"
expect_exit 0 sandshim install agent claude # back to path mode: the prefix goes
CLAUDE_PERMISSION_MODE=""

finish_agent_suite
