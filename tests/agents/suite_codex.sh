#!/usr/bin/env bash
# Codex, the real CLI, headless (`codex exec`) against the scripted model server (a custom model
# provider speaking the Responses API), after `sandshim install` and `sandshim install agent codex`
# in a fresh project and the steps the installer prints for `codex exec` (doctor's lines for
# Codex's config: the project's trust, each hook's hash). Codex itself approves
# every call here (its approvals and sandbox are off), so whatever is refused was refused by
# sandshim's hooks.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_agent codex

# The user's own rules with Codex's own approvals and sandbox on (on-request, workspace-write):
# echo allowed (Codex runs it outside its sandbox), touch forbidden, mkdir not listed (Codex's
# sandbox, which cannot start under this test's /tmp CODEX_HOME, so it fails). One session
# before sandshim is installed, the same after.
rules_session() {
    mkdir -p "$HOME/.codex/rules"
    printf 'prefix_rule(pattern=["echo"], decision="allow")\nprefix_rule(pattern=["touch"], decision="forbidden")\n' \
        >"$HOME/.codex/rules/user.rules"
    write_script "$(bash_step "echo rule-allowed")" "$(bash_step "touch rule-forbidden.txt")" \
        "$(bash_step "mkdir not-listed")"
    CODEX_APPROVALS=on-request run_agent
    rm -f "$HOME/.codex/rules/user.rules"
}
# What each call came to: ran, failed (in Codex's sandbox), or rejected by Codex's rules.
rules_outcomes() {
    "$HOST_PY" -c 'import json, sys
for result in json.load(open(sys.argv[1])):
    print("rejected" if "policy forbids" in result else "ran"
          if "Process exited with code 0" in result else "failed")' "$RESULTS"
}
rules_session
OUTCOMES_WITHOUT=$(rules_outcomes)
rm -rf "$WS/not-listed"

install_sandshim_for_agent codex

# A refusal by Codex itself: its own exec policy forbids rm (the user's rules file), so the call
# the hook had no objection to never runs.
mkdir -p "$HOME/.codex/rules"
printf 'prefix_rule(pattern=["rm"], decision="forbidden")\n' >"$HOME/.codex/rules/default.rules"
touch "$WS/keep-me.txt"
KNOWN_GAPS["codex: the audit row of a call Codex refused is closed"]="Codex sends no PostToolUse for an exec its own policy rejects, and sandshim installs no Codex event that could close the row (its Stop hook and the rollout file are not read yet)"
KNOWN_GAP_FAILURES["codex: the audit row of a call Codex refused is closed"]="the row of the call the agent refused is left pending"

# Codex sends no hook event for write_stdin: an interactive shell started by exec_command would
# run whatever is typed into it later on the host, so the shell itself must not start there.
standard_session '{"bash": "bash", "tty": true}' \
    "$(printf '{"stdin": %s}' "$(json_string $'/usr/bin/python3 -c \'open("escaped-by-stdin", "w")\'\nexit\n')")" \
    "$(bash_step "rm -f keep-me.txt")"
check_standard_session

interactive_shell_refused() {
    expect_decision "bash" deny
    expect_result_contains "$FIRST_EXTRA_STEP" "sandshim:"
    [[ ! -e $WS/escaped-by-stdin ]] || fail "python typed into the interactive shell ran on the host"
}
run_check "codex: an interactive shell, whose later input no hook sees, is refused" interactive_shell_refused

refused_by_codex() {
    expect_result_contains $((FIRST_EXTRA_STEP + 2)) "rejected"
    expect_result_not_contains $((FIRST_EXTRA_STEP + 2)) "sandshim:"
    [[ -e $WS/keep-me.txt ]] || fail "rm ran although Codex's own rules forbid it"
}
run_check "codex: a command Codex's own rules forbid is refused by Codex itself" refused_by_codex
refused_call_row_closed() { expect_decision_closed "rm -f keep-me.txt"; }
run_check "codex: the audit row of a call Codex refused is closed" refused_call_row_closed

# A hook changed since the install (here its timeout; Codex would not run it either, as changed
# since its review): doctor's tamper check names the file and the change, and passes again once
# the file is back.
changed_hook_fails_doctor() {
    cp "$WS/.codex/hooks.json" "$T/hooks.json.reviewed"
    sed -i '0,/"timeout": 60/s//"timeout": 61/' "$WS/.codex/hooks.json"
    agent_doctor
    cp "$T/hooks.json.reviewed" "$WS/.codex/hooks.json"
    expect_equal 1 "$DOCTOR_RC" "doctor's exit code"
    expect_contains "fail  hooks    codex (project): Codex: $WS/.codex/hooks.json does not hold what sandshim installs: its PreToolUse hook is not the one sandshim installs (its command or settings were changed)" "$OUT"
    agent_doctor
    expect_contains "ok    hooks    codex (project): Codex calls them" "$OUT"
}
run_check "codex: doctor fails on a hook changed since the install, naming the file" changed_hook_fails_doctor
# Codex judges its rules on the command after sandshim's rewrite: `. <routing script> … &&
# COMMAND` (plain words, which Codex reads as two simple commands; sandshim's own rules file
# allows the first) leaves COMMAND's words to the user's rules. The `export PATH=…;` prefix did
# not: Codex read it as one opaque script, the allowed echo stayed in its sandbox and the
# forbidden touch was not rejected.
rules_session
OUTCOMES_WITH=$(rules_outcomes)
rules_unchanged() {
    expect_equal $'ran\nrejected\nfailed' "$OUTCOMES_WITHOUT" "the calls' outcomes without sandshim"
    expect_equal "$OUTCOMES_WITHOUT" "$OUTCOMES_WITH" "the calls' outcomes with sandshim installed"
}
run_check "codex: the user's own rules decide as without sandshim" rules_unchanged
finish_agent_suite
