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
cat >"$HOME/.claude/settings.json" <<'JSON'
{
  "permissions": {
    "allow": ["Bash(python3:*)", "Bash(/usr/bin/python3:*)", "Bash(docker:*)", "Read", "Write"]
  }
}
JSON
touch "$WS/keep-me.txt"

standard_session "$(bash_step "rm -f keep-me.txt")"
check_standard_session

unlisted_command_refused_by_claude() {
    expect_result_not_contains 8 "sandshim:"
    [[ -e $WS/keep-me.txt ]] || fail "rm ran although no permission rule allows it"
}
run_check "claude: a command no rule allows is refused by Claude Code itself (nothing approved wholesale)" \
    unlisted_command_refused_by_claude

finish_agent_suite
