#!/usr/bin/env bash
# Gemini CLI, the real CLI, headless (`gemini -p`) against the scripted model server (Gemini's
# streamGenerateContent at GOOGLE_GEMINI_BASE_URL), after `sandshim install` and
# `sandshim install agent gemini` in a fresh project and the steps the installer prints. Gemini CLI
# itself approves every call here (--approval-mode yolo), so whatever is refused was refused by
# sandshim's hooks; but in the rules session, where the user's own rules decide.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_agent gemini

# The user's own rules (settings' tools.allowed): echo, ls and python3 allowed; anything else is
# denied by Gemini CLI's policy, as `-p` cannot ask. One session before sandshim is installed,
# the same after: the same calls run and the same are denied, and python3 runs sandboxed.
write_user_rules() {
    "$HOST_PY" - "$HOME/.gemini/settings.json" <<'EOF'
import json, sys
path = sys.argv[1]
settings = json.load(open(path))
settings["tools"] = {"allowed": ["run_shell_command(echo)", "run_shell_command(ls)",
                                 "run_shell_command(python3)"]}
json.dump(settings, open(path, "w"), indent=2)
EOF
}
rules_session() {
    touch "$WS/rules-marker.txt"
    write_script "$(bash_step "echo rule-allowed")" "$(bash_step "ls")" \
        "$(bash_step "cat rules-marker.txt")" "$(bash_step "python3 -c '$PROBE_PY'")"
    GEMINI_APPROVAL_MODE=default run_agent
}
# What each call of the rules session came to: ran, or denied by policy.
rules_outcomes() {
    "$HOST_PY" -c 'import json, sys
for result in json.load(open(sys.argv[1])):
    print("denied" if "denied by policy" in result else "ran")' "$RESULTS"
}
after_install_gemini # the folder's trust, which the session needs with or without sandshim
cp "$HOME/.gemini/settings.json" "$T/settings.plain.json"
write_user_rules
rules_session
OUTCOMES_WITHOUT=$(rules_outcomes)
cp "$T/settings.plain.json" "$HOME/.gemini/settings.json"

install_sandshim_for_agent gemini
CONFIG_TARGET=$WS/.sandshim.conf # Gemini CLI's file tools stay inside the project by themselves

# shellcheck disable=SC2119 # the standard steps only
standard_session
check_standard_session

write_user_rules
rules_session
rules_unchanged() {
    expect_equal $'ran\nran\ndenied\nran' "$OUTCOMES_WITHOUT" "the calls' outcomes without sandshim"
    expect_equal "$OUTCOMES_WITHOUT" "$(rules_outcomes)" "the calls' outcomes with sandshim installed"
    expect_result_contains 1 "rule-allowed"
    expect_result_contains 4 "probe host=sandbox uid=$SANDBOX_UID;"
    expect_decision "echo rule-allowed" allow
}
run_check "gemini: the user's own rules decide as without sandshim; python3 they allow runs sandboxed" rules_unchanged
cp "$T/settings.plain.json" "$HOME/.gemini/settings.json"
finish_agent_suite
