#!/usr/bin/env bash
# sandshim-test-engines: docker
# A refusal is a way forward (issue 24): the command an interpreter-route refusal names is taken
# out of the refusal's text and run, and it does the job in the sandbox. `pip install` and
# `uv pip install` get the same refusal and name the same command; that command installs a
# package into the workspace's venv once the configuration line the refusal names is set, and
# fails without it (the other direction). Every refusal names its rule and the line lifting it.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

sandshim install >/dev/null
[[ -x /usr/bin/python3 ]] || skip_or_fail "no /usr/bin/python3 to make the venv with"

# The venv, made by the python the images hold (its pip is the image's, through the system
# site-packages), writable by the container's user; a wheel only the workspace has.
/usr/bin/python3 -m venv --without-pip --system-site-packages "$WS/.venv"
chmod -R a+rwX "$WS/.venv"
mkdir -p "$WS/wheels"
"$HOST_PY" - "$WS/wheels/onlyhere-1.0-py3-none-any.whl" <<'PY'
import sys, zipfile
files = {"onlyhere/__init__.py": "WHERE = 'installed'\n",
         "onlyhere-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: onlyhere\nVersion: 1.0\n",
         "onlyhere-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
files["onlyhere-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + "onlyhere-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1], "w") as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
PY
# pip as pip's installer leaves it on the agent's PATH: a script run by the host's python.
mkdir -p "$T/bin"
printf '#!/usr/bin/python3\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n' >"$T/bin/pip"
chmod +x "$T/bin/pip"
readonly INSTALL="install --no-index --find-links wheels onlyhere"
readonly IMPORT="import onlyhere, socket; print('onlyhere=' + onlyhere.WHERE + ' host=' + socket.gethostname())"

# refusal AGENT COMMAND ID: the hook's refusal of COMMAND (Claude Code's PreToolUse) in $T/reason.
refusal() {
    agent_payload "$1" PreToolUse "$2" "$3" "$WS" >"$T/payload.json"
    PATH=$T/bin:$PATH EXPECT_STDIN=$T/payload.json expect_exit 0 sandshim hook --agent "$1"
    "$HOST_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["hookSpecificOutput"]["permissionDecisionReason"])' "$OUT" >"$T/reason"
}
# The named command as the agent then sends it: the hook lets it through (a way forward that the
# hook itself refuses would be none: `--image host` once was refused as a loosening flag).
expect_hook_passes() { # AGENT COMMAND: as the agent whose refusal named it
    agent_payload "$1" PreToolUse "$2" "named_$RANDOM" "$WS" >"$T/named.json"
    PATH=$T/bin:$PATH EXPECT_STDIN=$T/named.json expect_exit 0 sandshim hook --agent "$1"
    expect_not_contains '"permissionDecision":"deny"' "$OUT"
}
# The command a refusal names to run instead, the first backquoted text after its lead-in.
named_command() {
    "$HOST_PY" -c 'import re, sys
text = open(sys.argv[1]).read()
found = re.search(r"(?:In the sandbox|Instead|Run it through the sandbox|instead): `([^`]+)`", text)
print(found.group(1) if found else "")' "$T/reason"
}
# Each COMMAND's refusal holds TEXT and names NAMED, which runs in the sandbox with the arguments.
expect_each_names_and_runs() { # NAMED TEXT COMMAND...
    local named=$1 text=$2 command
    shift 2
    for command; do
        refusal claude "$command" "toolu_${command//[^a-z0-9]/_}"
        expect_contains "$text" "$T/reason"
        expect_equal "$named" "$(named_command)" "the command named for $command"
    done
    expect_hook_passes claude "$named"
    expect_exit 0 bash -c "$named"
    expect_contains "host=sandbox args=--flag 7" "$OUT"
}
# COMMAND's refusal (shebang-bypass) names host mode's run of RUN (interpreter, script, the same
# arguments), which the hook lets through and which prints OUTPUT, in the sandbox.
expect_host_mode_named() { # ID COMMAND RUN OUTPUT
    refusal claude "$2" "$1"
    expect_contains "Rule \`shebang-bypass\`" "$T/reason"
    named=$(named_command)
    expect_equal "$(printf '%q' "$SANDSHIM_BIN") run --wrap-shell --image host -- $3" "$named" "the named command for $2"
    expect_hook_passes claude "$named"
    expect_exit 0 bash -c "cd $(printf '%q' "$WS") && $named"
    expect_contains "$4" "$OUT"
}
# The value of `KEY = VALUE` in the refusal.
config_value() {
    "$HOST_PY" -c 'import re, sys
found = re.search("`" + re.escape(sys.argv[2]) + r" = ([^`]+)`", open(sys.argv[1]).read())
print(found.group(1) if found else "")' "$T/reason" "$1"
}

check "pip install is refused by its rule, naming the line that lifts it"
refusal claude "pip $INSTALL" toolu_pip_1
expect_lines 1 "$T/reason"
expect_contains "Rule \`package-install\`; \`hook.mode = wrap\` in the user's config lifts it" "$T/reason"
pip_command=$(named_command)
expect_equal "$(printf '%q' "$SANDSHIM_BIN") run -- .venv/bin/python3 -m pip $INSTALL" "$pip_command" "pip's named command"
writable=$(config_value sandbox.writable)
expect_equal ".venv" "$writable" "the writable path the refusal names"
expect_hook_passes claude "$pip_command"

check "uv pip install gets the same rule and names the same command"
refusal claude "uv pip $INSTALL" toolu_pip_2
expect_contains "Rule \`package-install\`" "$T/reason"
expect_equal "$pip_command" "$(named_command)" "uv's named command"

check "other direction: without the line the refusal names, nothing reaches the venv"
# pip falls back to the container's throw-away user site, which goes with the container.
expect_exit 0 bash -c "$pip_command"
expect_contains "Defaulting to user installation" "$OUT"
expect_exit 1 sandshim run -- .venv/bin/python3 -c "$IMPORT"
expect_contains "No module named 'onlyhere'" "$ERR"

check "with the line the refusal names, the named command installs into the venv, in the sandbox"
write_user_config <<CONF
[sandbox]
writable = $writable
CONF
expect_exit 0 bash -c "$pip_command"
expect_contains "Successfully installed onlyhere-1.0" "$OUT"
expect_not_contains "Defaulting to user installation" "$OUT"
expect_exit 0 sandshim run -- .venv/bin/python3 -c "$IMPORT"
expect_contains "onlyhere=installed host=sandbox" "$OUT"
[[ -f $WS/.venv/lib/python3.11/site-packages/onlyhere/__init__.py ]] || fail "the package is not in the workspace's venv"
reset_user_config

# Interpreter routes whose refusal names the interpreter by name: the named command, with the
# refused command's own arguments, runs in the sandbox exactly as named.
readonly PROBE_ARGS="-c 'import socket; print(\"host=\" + socket.gethostname())'"
for route in "/usr/bin/python3" "python3.11"; do
    check "$route: the named command runs in the sandbox"
    refusal codex "$route $PROBE_ARGS" "call_${route//[^a-z0-9]/_}"
    expect_contains "Rule \`" "$T/reason"
    named=$(named_command)
    expect_equal "python3 $PROBE_ARGS" "$named" "the command named for $route"
    expect_hook_passes codex "$named"
    PATH=$XDG_DATA_HOME/sandshim/bin:$PATH expect_exit 0 bash -c "$named"
    expect_contains "host=sandbox" "$OUT"
done

check "a venv's script by path: the named command runs it with the venv's python, exactly as named"
printf '#!%s/.venv/bin/python\nimport socket, sys\nprint("host=" + socket.gethostname() + " args=" + " ".join(sys.argv[1:]))\n' "$WS" >"$WS/.venv/bin/probe"
chmod +x "$WS/.venv/bin/probe"
refusal claude ".venv/bin/probe --flag 7" toolu_venv_script
expect_contains "Rule \`shebang-bypass\`" "$T/reason"
named=$(named_command)
expect_equal "$(printf '%q' "$SANDSHIM_BIN") run -- .venv/bin/python3 .venv/bin/probe --flag 7" "$named" "the venv script's named command"
expect_hook_passes claude "$named"
expect_exit 0 bash -c "$named"
expect_contains "host=sandbox args=--flag 7" "$OUT"

check "a host tool the project's venv also has, and uv run of it: the venv's runs it, as named"
# The same name on the agent's PATH, run by the host's python (pipx's, Debian's), and uv.
printf '#!/usr/bin/python3\nprint("host python")\n' >"$T/bin/probe"
printf '#!/bin/sh\necho uv on the host\n' >"$T/bin/uv"
chmod +x "$T/bin/probe" "$T/bin/uv"
venv_probe="$(printf '%q' "$SANDSHIM_BIN") run -- .venv/bin/python3 .venv/bin/probe --flag 7"
expect_each_names_and_runs "$venv_probe" "The project's venv" "probe --flag 7" "uv run probe --flag 7"
rm "$T/bin/probe" "$T/bin/uv"

check "uv run and uvx of a tool whose venv entry is no python script (ruff's binary): its package runs it, as named"
# The venv's own entry is a program python cannot run as a file; its package has a __main__.
site=$(echo "$WS"/.venv/lib/python3.*/site-packages)
mkdir -p "$site/modprobe"
printf 'import socket, sys\nprint("host=" + socket.gethostname() + " args=" + " ".join(sys.argv[1:]))\n' >"$site/modprobe/__main__.py"
printf '#!/bin/sh\necho not the sandbox\n' >"$WS/.venv/bin/modprobe"
printf '#!/bin/sh\necho uv on the host\n' >"$T/bin/uv"
printf '#!/bin/sh\necho uvx on the host\n' >"$T/bin/uvx"
chmod -R a+rX "$site/modprobe"
chmod +x "$WS/.venv/bin/modprobe" "$T/bin/uv" "$T/bin/uvx"
module_run="$(printf '%q' "$SANDSHIM_BIN") run -- .venv/bin/python3 -m modprobe --flag 7"
expect_each_names_and_runs "$module_run" "Rule \`launcher-bypass\`" "uv run modprobe --flag 7" "uvx modprobe --flag 7"
rm -r "$site/modprobe" "$WS/.venv/bin/modprobe" "$T/bin/uv" "$T/bin/uvx"

check "the venv's python by path: the named command is the same run, in the sandbox"
refusal claude ".venv/bin/python $PROBE_ARGS" toolu_venv_python
expect_contains "Rule \`venv-by-path\`" "$T/reason"
named=$(named_command)
expect_hook_passes claude "$named"
expect_exit 0 bash -c "$named"
expect_contains "host=sandbox" "$OUT"

check "a system tool's script (Debian's pytest): the named host-mode run passes the workspace's tests, in the sandbox"
if [[ -x /usr/bin/pytest ]]; then
    printf 'import socket\n\ndef test_sandboxed():\n    assert socket.gethostname() == "sandbox"\n' >"$WS/test_here.py"
    chmod a+r "$WS/test_here.py"
    refusal claude "pytest -q -p no:cacheprovider test_here.py" toolu_pytest_1
    expect_contains "Rule \`shebang-bypass\`" "$T/reason"
    pytest_command=$(named_command)
    expect_equal "$(printf '%q' "$SANDSHIM_BIN") run --wrap-shell --image host -- /usr/bin/python3 /usr/bin/pytest -q -p no:cacheprovider test_here.py" "$pytest_command" "pytest's named command"
    expect_hook_passes claude "$pytest_command"
    (cd "$WS" && eval "$pytest_command") >"$T/pytest.out" 2>&1 || fail "the named command failed: $(tail -n 5 "$T/pytest.out")"
    expect_contains "1 passed" "$T/pytest.out"
    rm "$WS/test_here.py"
else
    [[ ${CI:-} != true ]] || fail "/usr/bin/pytest is missing under CI=true (install/deps.sh installs python3-pytest)"
    say "SKIP: $CHECK: /usr/bin/pytest is not installed (install/deps.sh installs python3-pytest)"
fi

check "a tool the sandbox cannot see (virtualenv from ~/.local): the named sandshim -c makes the venv, which sandboxed runs then use"
printf '#!/usr/bin/python3\nimport sys\nsys.exit("virtualenv ran on the host")\n' >"$T/bin/virtualenv"
chmod +x "$T/bin/virtualenv"
refusal claude "virtualenv made_venv" toolu_virtualenv_1
expect_contains "Rule \`shebang-bypass\`" "$T/reason"
named=$(named_command)
expect_equal "$(printf '%q' "$SANDSHIM_BIN") -c 'python3 -m venv made_venv'" "$named" "virtualenv's named command"
expect_hook_passes claude "$named"
chmod 777 "$WS" # the sandbox's user (65534 for root) writes the venv; the default wrap lets it
(cd "$WS" && eval "$named") >"$T/venv.out" 2>&1 || fail "the named command failed: $(tail -n 5 "$T/venv.out")"
chmod 755 "$WS"
[[ -L $WS/made_venv/bin/python && -f $WS/made_venv/pyvenv.cfg ]] || fail "no venv in the workspace after the named command"
expect_exit 0 sandshim run -- made_venv/bin/python -c 'import socket, sys; print(sys.prefix.endswith("/made_venv"), "host=" + socket.gethostname())'
expect_contains "True host=sandbox" "$OUT"
rm -rf "$WS/made_venv" "$T/bin/virtualenv"

check "a pipx tool (its own venv outside the workspace): the named host-mode run of that venv runs it, in the sandbox"
# As pipx lays it out: a venv of the host's python under ~/.local/pipx, the tool linked from
# ~/.local/bin; a module only that venv has, so the run shows it used the venv.
pipx_venv=$HOME/.local/pipx/venvs/pxprobe
/usr/bin/python3 -m venv --without-pip "$pipx_venv"
site=$(echo "$pipx_venv"/lib/python3.*/site-packages)
mkdir -p "$site/onlypipx" "$HOME/.local/bin"
printf 'WHERE = "pipx venv"\n' >"$site/onlypipx/__init__.py"
printf '#!%s/bin/python\nimport onlypipx, socket, sys\nprint("host=" + socket.gethostname() + " args=" + " ".join(sys.argv[1:]) + " from=" + onlypipx.WHERE)\n' "$pipx_venv" >"$pipx_venv/bin/pxprobe"
chmod -R a+rX "$HOME/.local"
chmod +x "$pipx_venv/bin/pxprobe"
ln -s "$pipx_venv/bin/pxprobe" "$T/bin/pxprobe"
expect_host_mode_named toolu_pipx_pxprobe "pxprobe --flag 7" \
    "$pipx_venv/bin/python $pipx_venv/bin/pxprobe --flag 7" "host=sandbox args=--flag 7 from=pipx venv"
# That venv's python by path (a venv the image cannot run: outside the workspace): the same way.
refusal claude "$pipx_venv/bin/python -c 'import onlypipx; print(onlypipx.WHERE)'" toolu_pipx_python
expect_contains "Rule \`venv-by-path\`" "$T/reason"
named=$(named_command)
expect_hook_passes claude "$named"
expect_exit 0 bash -c "cd $(printf '%q' "$WS") && $named"
expect_contains "pipx venv" "$OUT"
rm -rf "$T/bin/pxprobe" "$HOME/.local/pipx"

check "a pip --user tool (its package in ~/.local/lib) and a user's perl script: the named host-mode run finds them, in the sandbox"
# As `pip install --user` lays it out: the script in ~/.local/bin, run by the host's python, its
# package in the user site of that python's version, which no image has.
user_site=$HOME/.local/lib/python$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')/site-packages
mkdir -p "$user_site/onlyuser" "$HOME/.local/bin"
printf 'WHERE = "user site"\n' >"$user_site/onlyuser/__init__.py"
printf '#!/usr/bin/python3\nimport onlyuser, socket, sys\nprint("host=" + socket.gethostname() + " args=" + " ".join(sys.argv[1:]) + " from=" + onlyuser.WHERE)\n' >"$HOME/.local/bin/usertool"
chmod -R a+rX "$HOME/.local"
chmod 755 "$HOME/.local/bin/usertool"
PATH=$HOME/.local/bin:$PATH expect_host_mode_named toolu_user_tool "usertool --flag 7" \
    "/usr/bin/python3 $HOME/.local/bin/usertool --flag 7" "host=sandbox args=--flag 7 from=user site"
# The other direction: the same script copied where no user base is has no package to import.
cp "$HOME/.local/bin/usertool" "$T/bin/usertool"
expect_exit 1 bash -c "cd $(printf '%q' "$WS") && $(printf '%q' "$SANDSHIM_BIN") run --wrap-shell --image host -- /usr/bin/python3 $T/bin/usertool"
expect_contains "No module named 'onlyuser'" "$ERR"
# A user's own perl script (a tool built into a directory of the user's): the script alone.
printf '#!/usr/bin/perl\nuse strict;\nuse Sys::Hostname;\nprint "host=" . hostname() . " args=@ARGV\\n";\n' >"$T/bin/userperl"
chmod 755 "$T/bin/userperl"
expect_host_mode_named toolu_user_perl "userperl --flag 7" "/usr/bin/perl $T/bin/userperl --flag 7" \
    "host=sandbox args=--flag 7"
rm -rf "$HOME/.local/bin/usertool" "$user_site/onlyuser" "$T/bin/usertool" "$T/bin/userperl"

check "deny mode: the named sandshim run works as named"
write_user_config <<'CONF'
[hook]
mode = deny
CONF
refusal codex "python3 $PROBE_ARGS" call_deny_1
expect_contains "Rule \`interpreter-outside-sandbox\`; \`hook.mode = path\` in the user's config lifts it" "$T/reason"
named=$(named_command)
expect_equal "$(printf '%q' "$SANDSHIM_BIN") run -- python3 $PROBE_ARGS" "$named" "deny mode's named command"
expect_hook_passes codex "$named"
expect_exit 0 bash -c "$named"
expect_contains "host=sandbox" "$OUT"
reset_user_config

suite_done
