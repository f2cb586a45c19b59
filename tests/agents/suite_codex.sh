#!/usr/bin/env bash
# Codex, the real CLI, headless (`codex exec`) against the scripted model server (a custom model
# provider speaking the Responses API), after `sandshim install` and `sandshim install agent codex`
# in a fresh project and the steps the installer prints for `codex exec`. Codex itself approves
# every call here (its approvals and sandbox are off), so whatever is refused was refused by
# sandshim's hooks.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_agent codex
install_sandshim_for_agent codex

# Codex sends no hook event for write_stdin: an interactive shell started by exec_command would
# run whatever is typed into it later on the host, so the shell itself must not start there.
standard_session '{"bash": "bash", "tty": true}' \
    "$(printf '{"stdin": %s}' "$(json_string $'/usr/bin/python3 -c \'open("escaped-by-stdin", "w")\'\nexit\n')")"
check_standard_session

interactive_shell_refused() {
    expect_decision "bash" deny
    expect_result_contains 8 "sandshim:"
    [[ ! -e $WS/escaped-by-stdin ]] || fail "python typed into the interactive shell ran on the host"
}
run_check "codex: an interactive shell, whose later input no hook sees, is refused" interactive_shell_refused
finish_agent_suite
