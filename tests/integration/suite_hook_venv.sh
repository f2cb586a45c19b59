#!/usr/bin/env bash
# sandshim-test-engines: docker
# Venvs from an agent's command: a package installed only in a workspace venv imports in the
# sandbox through the command the hook names (Claude Code, deny mode) or through the rewrite
# (Codex), and not through the image's own python (the other direction); unhooked, the
# activation runs the venv's python on the host. A venv another python made is refused with one
# line naming what works.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

sandshim install >/dev/null
[[ -x /usr/bin/python3 ]] || skip_or_fail "no /usr/bin/python3 to make the venv with"

# The venv, made by the python the images hold, with a package only it has.
/usr/bin/python3 -m venv --without-pip "$WS/.venv"
site=$(/usr/bin/python3 -c 'import sys; print(f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages")')
mkdir -p "$WS/.venv/$site/onlyinvenv"
printf 'WHERE = "venv"\n' >"$WS/.venv/$site/onlyinvenv/__init__.py"
cat >"$WS/x.py" <<'PY'
import socket, sys
import onlyinvenv
print("venv-package=" + onlyinvenv.WHERE + " host=" + socket.gethostname())
sys.exit(43)
PY
readonly ACTIVATE="source .venv/bin/activate && python x.py"

# hook AGENT COMMAND ID [MODE]: the hook's answer to a PreToolUse payload in $OUT.
hook() {
    "$HOST_PY" - "$1" "$2" "$3" "$WS" >"$T/payload.json" <<'PY'
import json, sys
agent, command, call, cwd = sys.argv[1:5]
body = {"session_id": "venv-" + agent, "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": call}
if agent == "codex":
    body.update({"turn_id": "turn-1", "model": "gpt-5-codex"})
print(json.dumps(body))
PY
    EXPECT_STDIN=$T/payload.json expect_exit 0 sandshim hook --agent "$1"
}

# Claude Code's session environment, started as Claude Code starts it (see suite_hooks.sh).
export CLAUDE_CONFIG_DIR=$T/claude
mkdir -p "$CLAUDE_CONFIG_DIR/session-env/venv-claude"
printf '{"session_id":"venv-claude","transcript_path":"/tmp/t.jsonl","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' "$WS" >"$T/start.json"
CLAUDE_ENV_FILE=$CLAUDE_CONFIG_DIR/session-env/venv-claude/sessionstart-hook-0.sh \
    EXPECT_STDIN=$T/start.json expect_exit 0 sandshim hook --agent claude
reason() { "$HOST_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["hookSpecificOutput"]["permissionDecisionReason"])' "$OUT"; }
rewritten() { "$HOST_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["hookSpecificOutput"]["updatedInput"]["command"])' "$OUT"; }

check "control: unhooked, the activation runs the venv's python on the host"
expect_exit 43 bash -c "$ACTIVATE"
expect_contains "venv-package=venv host=$(hostname)" "$OUT"

check "claude: the activation is refused, naming a sandboxed run with the venv's packages"
hook claude "$ACTIVATE" toolu_venv_1
reason >"$T/reason"
expect_contains "run -- .venv/bin/python3 …" "$T/reason"
expect_lines 1 "$T/reason"

check "the named run imports the venv-only package in the sandbox, exit code kept"
expect_exit 43 sandshim run -- .venv/bin/python3 x.py
expect_contains "venv-package=venv host=sandbox" "$OUT"

check "other direction: the image's own python has no such package"
expect_exit 1 sandshim run -- python3 x.py
expect_contains "No module named 'onlyinvenv'" "$ERR"

check "claude: the venv's python by path is refused with the same sandboxed run"
hook claude ".venv/bin/python x.py" toolu_venv_2
reason >"$T/reason"
expect_contains "is the venv's python called by path" "$T/reason"
expect_contains "run -- .venv/bin/python3 x.py\`" "$T/reason"

check "codex: the whole command runs in the sandbox, activation included, with the venv's packages"
hook codex "$ACTIVATE" call_venv_3
command=$(rewritten)
expect_exit 43 bash -c "$command"
expect_contains "venv-package=venv host=sandbox" "$OUT"

check "deny mode: refused with the same sandboxed run"
write_user_config <<'CONF'
[hook]
mode = deny
CONF
hook codex "$ACTIVATE" call_venv_4
reason >"$T/reason"
expect_contains "run -- .venv/bin/python3 …" "$T/reason"
reset_user_config

check "a venv another python made is refused in one line naming what works"
/usr/bin/python3 -m venv --without-pip "$WS/other"
sed -i 's/^home = .*/home = \/opt\/python3.12\/bin/; s/^version = .*/version = 3.12.1/' "$WS/other/pyvenv.cfg"
hook claude "source other/bin/activate && python x.py" toolu_venv_5
reason >"$T/reason"
expect_lines 1 "$T/reason"
expect_contains "made by python 3.12.1" "$T/reason"
expect_contains "Instead: \`python3 …\`" "$T/reason"

suite_done
