#!/usr/bin/env bash
# Claude Code, the real CLI, headless (`claude -p`, default permission mode) against the scripted
# model server, after `sandshim install` and `sandshim install agent claude` in a fresh project.
# The user's own allow rules admit python3, /usr/bin/python3, docker and file writes, so whatever
# is refused below was refused by sandshim; a command no rule admits is refused by Claude Code
# itself, which shows that sandshim approves nothing wholesale.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_agent claude
mkdir -p "$HOME/.claude"
cat >"$HOME/.claude/settings.json" <<JSON
{
  "permissions": {
    "deny": ["Bash(touch rule-denied.txt)"],
    "additionalDirectories": ["/tmp"],
    "allow": ["Bash(python3:*)", "Bash(/usr/bin/python3:*)", "Bash(docker:*)", "Read", "Write",
      "Bash(test:*)", "Bash(echo:*)", "Bash(break)", "Bash(tr:*)", "Bash(hostname)", "Bash(id:*)",
      "Bash(node:*)", "Bash(npm test)", "Bash(npx:*)", "Bash(node_modules/.bin/probe-bin:*)",
      "Bash(./probe.py:*)"]
  }
}
JSON
touch "$WS/keep-me.txt"

# The user's own rules, one session before sandshim is installed and the same after: echo
# allowed, touch denied, rm not listed (refused, as -p cannot ask), python3 allowed.
rules_session() {
    write_script "$(bash_step "echo rule-allowed")" "$(bash_step "touch rule-denied.txt")" \
        "$(bash_step "rm -f keep-me.txt")" "$(bash_step "python3 -c '$PROBE_PY'")"
    run_agent
}
# What each call of the rules session came to: ran, refused by Claude Code, or by sandshim.
rules_outcomes() {
    "$HOST_PY" -c 'import json, sys
for result in json.load(open(sys.argv[1])):
    print("sandshim" if "sandshim:" in result else "refused" if result.startswith("[is_error]")
          else "ran")' "$RESULTS"
}
rules_session
OUTCOMES_WITHOUT=$(rules_outcomes)
install_sandshim_for_agent claude

# A loop appending to a file (no variable: Claude Code asks about those), then where it ran. Shell writes need the user's acceptEdits.
WRAP_MARKER=/tmp/sandshim-agents-wrap-marker.$$ # /tmp: the sandbox's own is writable
rm -f "$WRAP_MARKER"
WRAP_COMMAND="until test -s '$WRAP_MARKER'; do echo loop >> '$WRAP_MARKER' || break; done; tr '\\n' ' ' < '$WRAP_MARKER'; hostname; id -u"
standard_session "$(bash_step "rm -f keep-me.txt")"
check_standard_session

rules_session
OUTCOMES_WITH=$(rules_outcomes)
rules_unchanged() {
    expect_equal $'ran\nrefused\nrefused\nran' "$OUTCOMES_WITHOUT" "the calls' outcomes without sandshim"
    expect_equal "$OUTCOMES_WITHOUT" "$OUTCOMES_WITH" "the calls' outcomes with sandshim installed"
    expect_result_contains 4 "probe host=sandbox uid=$SANDBOX_UID;"
    [[ ! -e $WS/rule-denied.txt && -e $WS/keep-me.txt ]] || fail "a command the user's rules refuse ran"
}
run_check "claude: the user's own rules decide as without sandshim; python3 they allow runs sandboxed" rules_unchanged

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
if [[ $AGENT_MODE == broker ]]; then
    expect_contains "wrap mode through the broker: its commands get the workspace as" "$OUT"
else
    expect_contains "wrap mode: its commands may write the workspace (sandbox.workspace = wrap)" "$OUT"
fi
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

# Claude Code's own sandbox on as well ("sandbox": {"enabled": true} in the user's settings):
# bubblewrap, and a seccomp filter that refuses every AF_UNIX socket on Linux, the broker's too,
# unless sandbox.network.allowAllUnixSockets is true (allowUnixSockets, by path, is macOS only).
# First the sandbox on with sandshim as installed before (the control: the broker's socket is
# refused), then installed again: in broker mode the install adds allowAllUnixSockets and
# python3 runs in sandshim's sandbox, while Claude Code's still refuses a write its rules deny
# (the user's own denyWrite: /tmp, in the session's working directories, is writable there).
READ_ONLY_DIR=$WS/kept-read-only
SANDBOX_MARKER=$READ_ONLY_DIR/marker
OTHER_SOCKET=$T/other.sock
mkdir -p "$READ_ONLY_DIR"
PROJECT_SETTINGS_BEFORE=$(cat "$WS/.claude/settings.json")
cp "$HOME/.claude/settings.json" "$T/user-settings.without-sandbox"
"$HOST_PY" - "$HOME/.claude/settings.json" "$READ_ONLY_DIR" <<'EOF2'
import json, sys
settings = json.load(open(sys.argv[1]))
settings["permissions"]["allow"] += ["Bash(touch:*)", "Bash(socat:*)", "Bash(./sockprobe:*)"]
settings["sandbox"] = {"enabled": True, "filesystem": {"denyWrite": [sys.argv[2]]}}
json.dump(settings, open(sys.argv[1], "w"), indent=2)
EOF2
# A unix socket of the test's own, open to every uid: what allowAllUnixSockets opens besides the broker's.
"$HOST_PY" -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"other-socket-answered\n"); c.close()' "$OTHER_SOCKET" &
OTHER_LISTENER=$!
SIX_SEVEN="python3 -c 'print(6*7)'"
write_script "$(bash_step "$SIX_SEVEN")"
run_agent

sandbox_refuses_the_socket_until_allowed() {
    if ! command -v bwrap >/dev/null || ! command -v socat >/dev/null; then
        fail "Claude Code's sandbox needs bubblewrap and socat on Linux (install/deps.sh installs them)"
    fi
    expect_result_not_contains 1 "42"
    if [[ $AGENT_MODE == broker ]]; then
        expect_result_contains 1 "Exit code 125"
        expect_result_contains 1 "a sandbox around this process refuses unix sockets"
    fi
}
run_check "claude sandbox control: with Claude Code's sandbox on and nothing allowed, python3 does not reach sandshim" \
    sandbox_refuses_the_socket_until_allowed

sandbox_doctor_before() {
    agent_doctor
    if [[ $AGENT_MODE == broker ]]; then
        grep -q '^fail  sandbox  Claude Code.s own sandbox is on .* refuses the broker.s socket' "$OUT" ||
            fail "doctor's sandbox line: $(grep sandbox "$OUT")"
    else
        grep -q '^warn  sandbox  Claude Code.s own sandbox is on .* refuses the engine.s socket' "$OUT" ||
            fail "doctor's sandbox line: $(grep sandbox "$OUT")"
    fi
}
run_check "claude sandbox: doctor says the sandbox is on and the socket is refused" sandbox_doctor_before

expect_exit 0 sandshim install agent claude
cp "$OUT" "$T/install-sandbox.out"
unix_sockets_allowed_in_broker_mode_only() {
    local allowed
    allowed=$("$HOST_PY" -c 'import json, sys
print(json.load(open(sys.argv[1])).get("sandbox", {}).get("network", {}).get("allowAllUnixSockets"))' "$WS/.claude/settings.json")
    if [[ $AGENT_MODE == broker ]]; then
        expect_equal True "$allowed" "sandbox.network.allowAllUnixSockets in the project's settings"
        expect_contains "lets its commands reach the broker's socket $SOCK" "$T/install-sandbox.out"
    else
        expect_equal None "$allowed" "sandbox.network.allowAllUnixSockets in direct mode"
        expect_contains "the shims use the engine's socket (direct mode)" "$T/install-sandbox.out"
    fi
}
run_check "claude sandbox: the install allows unix sockets in broker mode only" unix_sockets_allowed_in_broker_mode_only

if [[ $AGENT_MODE == broker ]]; then
    # A program sandshim's hook does not know (it knows socat's file under any name) that
    # connects to the unix socket its argument names and prints what it reads.
    cat >"$T/sockprobe.c" <<'EOF2'
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int main(int argc, char** argv) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char buf[128];
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (argc < 2 || s < 0) { perror("socket"); return 3; }
    strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
    if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) { perror("connect"); return 4; }
    ssize_t n = read(s, buf, sizeof buf);
    return n > 0 && write(1, buf, (size_t)n) == n ? 0 : 5;
}
EOF2
    cc -o "$WS/sockprobe" "$T/sockprobe.c" || fail "cannot compile the socket probe"
    write_script "$(bash_step "$SIX_SEVEN")" "$(bash_step "touch $SANDBOX_MARKER")" \
        "$(bash_step "socat - UNIX-CONNECT:$OTHER_SOCKET")" \
        "$(bash_step "./sockprobe $OTHER_SOCKET")"
    run_agent
    rm -f "$WS/sockprobe"
fi
both_sandboxes_work_together() {
    expect_result_contains 1 "42"
    audit_cmd list --limit 20 --json >"$T/runs.json"
    "$HOST_PY" - "$T/runs.json" <<'EOF2' || fail "no audited python3 run of print(6*7)"
import json, sys
runs = json.load(open(sys.argv[1]))
if not any("print(6*7)" in " ".join(run.get("argv") or []) and run.get("exit_code") == 0 for run in runs):
    sys.exit("no run of print(6*7) with exit code 0 in the audit")
EOF2
}
claude_sandbox_still_on() {
    expect_result_contains 2 "Read-only file system"
    [[ ! -e $SANDBOX_MARKER ]] || fail "touch wrote $SANDBOX_MARKER, which the user's denyWrite names"
    hand_over
    "${AS_USER[@]}" touch "$SANDBOX_MARKER" || fail "control: the agent's user cannot write $SANDBOX_MARKER outside the sandbox"
}
# Linux allows every unix socket or none: sandshim's hook refuses the unix-socket tools it knows
# (socat, nc -U, curl --unix-socket), but Claude Code's sandbox no longer refuses any socket: the
# test's own answers a program the hook does not know (a Claude Code that could allow one path on
# Linux would refuse it, and this check would say so).
other_socket_reachable_too() {
    expect_result_contains 3 "sandshim:"
    expect_result_not_contains 3 "other-socket-answered"
    expect_result_contains 4 "other-socket-answered"
}
if [[ $AGENT_MODE == broker ]]; then
    run_check "claude sandbox: with both sandboxes on, python3 runs in sandshim's (42, audited)" \
        both_sandboxes_work_together
    run_check "claude sandbox: Claude Code's sandbox still refuses a write its denyWrite names" \
        claude_sandbox_still_on
    run_check "claude sandbox: allowAllUnixSockets opens every unix socket, not only the broker's (Linux); the hook refuses socat" \
        other_socket_reachable_too
    sandbox_doctor_after() {
        agent_doctor
        grep -q "^ok    sandbox  Claude Code.s own sandbox is on .*allowAllUnixSockets .* the broker.s socket $SOCK" "$OUT" ||
            fail "doctor's sandbox line: $(grep sandbox "$OUT")"
    }
    run_check "claude sandbox: doctor says the broker's socket is allowed" sandbox_doctor_after
fi
kill "$OTHER_LISTENER" 2>/dev/null || true # teardown: it may have ended with its check, which asserted above
rm -rf "$READ_ONLY_DIR"

# Uninstall takes out the key it added; the sandbox turned off and an install again leave the
# project's settings as they were before, byte for byte.
expect_exit 0 sandshim install agent claude --uninstall
cp "$WS/.claude/settings.json" "$T/project-settings.uninstalled" 2>/dev/null || : >"$T/project-settings.uninstalled"
cp "$T/user-settings.without-sandbox" "$HOME/.claude/settings.json"
expect_exit 0 sandshim install agent claude
unix_sockets_removed_exactly() {
    ! grep -q allowAllUnixSockets "$T/project-settings.uninstalled" ||
        fail "--uninstall left allowAllUnixSockets: $(cat "$T/project-settings.uninstalled")"
    expect_equal "$PROJECT_SETTINGS_BEFORE" "$(cat "$WS/.claude/settings.json")" "the project's settings"
}
run_check "claude sandbox: uninstall removes exactly what the install added" unix_sockets_removed_exactly

finish_agent_suite
