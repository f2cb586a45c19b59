#!/usr/bin/env bash
# sandshim doctor: one line per check, ok/warn/fail, the fix on each failure, exit 1 on a failure;
# --json for tools. doctor --containers: a real default sandshim run passes every CIS Docker
# Benchmark runtime check that applies, and hand-made containers carrying sandshim's label
# (privileged, capabilities added, the engine socket mounted) fail them, so the check can fail.
# sandshim-test-engines: docker
# (docker only: the control containers are made with the docker client by hand)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SHIM_DIR=$XDG_DATA_HOME/sandshim/bin

# status of CHECK in doctor's --json output (the first line of that check).
json_status() { # FILE CHECK
    "$HOST_PY" -c 'import json, sys
doc = json.load(open(sys.argv[1]))
print(next((c["status"] for c in doc["checks"] if c["check"] == sys.argv[2]), "<none>"))' "$1" "$2"
}

check "a fresh home: the missing shims fail with the fix, the engine and limits are ok, exit 1"
expect_exit 1 sandshim doctor
expect_contains "fail  shims    no link to this binary for node, python, python3, sh in $SHIM_DIR; fix: \`sandshim install\`" "$OUT"
expect_contains "ok    engine   docker " "$OUT"
expect_contains "ok    runtime  OCI runtime " "$OUT"
expect_contains "ok    limits   memory, swap, cpus, pids enforced" "$OUT"
expect_contains "ok    image    sandshim/python:bookworm (python, python3) present" "$OUT"
expect_contains "warn  path     $SHIM_DIR is not on PATH" "$OUT"
expect_contains "warn  hooks    no agent's hooks are installed" "$OUT"
expect_contains "ok    audit    $SANDSHIM_AUDIT_DB writable, chain verified" "$OUT"
expect_file_is "$ERR" ""

check "shims installed and first on PATH, hooks installed: every check ok, exit 0"
sandshim install >/dev/null
sandshim install agent claude --project "$WS" >/dev/null
expect_exit 42 sandshim run -- sh -c 'exit 42' # a run, so the chain has a link to verify
PATH=$SHIM_DIR:$PATH expect_exit 0 sandshim doctor
expect_not_contains "fail  " "$OUT"
# The broker's mode line warns in direct mode (this suite runs without a broker); the version
# lines depend on this host's interpreters (their own check is below).
grep -Ev '^warn  (mode|version) ' "$OUT" >"$T/without-mode"
expect_not_contains "warn  " "$T/without-mode"
expect_contains "ok    path     $SHIM_DIR is first on PATH for node, python, python3, sh" "$OUT"
expect_contains "ok    hooks    claude (project): Claude Code calls them" "$OUT"
expect_contains "chain verified (1 links)" "$OUT"
expect_contains "ok    sandbox  Claude Code's own sandbox is off: sandshim is the sandbox" "$OUT"
expect_lines 16 "$OUT"

check "version: each image's interpreter against the next one on PATH after the shims"
# python3: the host's own, as in the image; node: a host binary that answers another version (the
# python3 binary under the name node), so the mismatch shows on any host.
mkdir -p "$T/hostbin"
ln -s /usr/bin/python3 "$T/hostbin/python3"
ln -s /usr/bin/python3 "$T/hostbin/node"
host_py=$(/usr/bin/python3 --version | cut -d' ' -f2)
image_py=$("$DOCKER" run --rm --network none sandshim/python:bookworm python3 --version | cut -d' ' -f2)
image_node=$("$DOCKER" run --rm --network none sandshim/node:bookworm node --version | tr -d v)
PATH=$SHIM_DIR:$T/hostbin:$PATH expect_exit 0 sandshim doctor
expect_contains "ok    version  python3 $image_py in sandshim/python:bookworm, as the host's $T/hostbin/python3 ($host_py)" "$OUT"
expect_contains "warn  version  node: the host's $T/hostbin/node is $host_py, sandshim/node:bookworm has $image_node; fix: an image with node $host_py, mapped with \`images.node = IMAGE\`, or \`images.node = host\` (the host's own)" "$OUT"
expect_equal 1 "$(grep -c '^warn  version ' "$OUT")" "version warnings"
rm -r "$T/hostbin"

check "hooks: doctor fails, with the fix, when an installed agent will not call them"
printf '{"disableAllHooks": true}\n' >"$WS/.claude/settings.local.json"
PATH=$SHIM_DIR:$PATH expect_exit 1 sandshim doctor
expect_contains "fail  hooks    claude (project): Claude Code: disableAllHooks is true in $WS/.claude/settings.local.json, so no hook runs; fix: remove \"disableAllHooks\"" "$OUT"
rm "$WS/.claude/settings.local.json"
sandshim install agent codex --project "$WS" >/dev/null
sandshim install agent gemini --project "$WS" >/dev/null
PATH=$SHIM_DIR:$PATH expect_exit 1 sandshim doctor
# Codex is asked itself (`codex app-server`): tests/agents/suite_codex.sh proves trust both ways
# with the real CLI; here, with or without a codex on PATH, it is not a pass.
expect_contains "fail  hooks    codex (project): Codex: " "$OUT"
sandshim install agent codex --project "$WS" --uninstall >/dev/null
expect_contains "fail  hooks    gemini (project): Gemini CLI: $WS is not a trusted folder" "$OUT"

check "hooks: trusted, as Gemini CLI records it, they pass"
mkdir -p "$HOME/.gemini"
printf '{"%s": "TRUST_FOLDER"}\n' "$WS" >"$HOME/.gemini/trustedFolders.json"
PATH=$SHIM_DIR:$PATH expect_exit 0 sandshim doctor
expect_contains "ok    hooks    gemini (project): Gemini CLI calls them" "$OUT"
sandshim install agent gemini --project "$WS" --uninstall >/dev/null

check "--json: the same checks for tools"
PATH=$SHIM_DIR:$PATH expect_exit 0 sandshim doctor --json
cp "$OUT" "$T/doctor.json"
expect_equal True "$("$HOST_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["ok"])' "$T/doctor.json")" ok
expect_equal ok "$(json_status "$T/doctor.json" limits)" "limits status"
expect_equal ok "$(json_status "$T/doctor.json" path)" "path status"

check "control: a missing image, a shadowed name and a tampered audit each fail or warn with the fix"
printf '[images]\nnode = sandshim/missing:none\n' >"$XDG_CONFIG_HOME/sandshim/config"
mkdir -p "$T/earlier"
ln -s /bin/true "$T/earlier/python"
"$HOST_PY" -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE runs SET exit_code = 7 WHERE chain_seq = 1")
db.commit()' "$SANDSHIM_AUDIT_DB"
PATH=$T/earlier:$SHIM_DIR:$PATH expect_exit 1 sandshim doctor
expect_contains "fail  image    sandshim/missing:none (node) missing; fix: \`sandshim images build\`" "$OUT"
expect_contains "warn  path     $SHIM_DIR covers node, python3, sh; found elsewhere first: python; it is not first on PATH; fix: " "$OUT"
expect_contains "fail  audit    $SANDSHIM_AUDIT_DB: the chain does not verify: " "$OUT"
rm "$XDG_CONFIG_HOME/sandshim/config"

check "limits.unenforced is a policy key, refuse by default"
expect_exit 0 sandshim policy keys
expect_contains "limits.unenforced (default: refuse; lower layers may tighten it;" "$OUT"

check "--help teaches: what each check means and the exit code"
expect_exit 0 sandshim doctor --help
expect_contains "limits    the memory, swap, cpus and pids limits are really enforced" "$OUT"
expect_contains "exit code is 1 when any check fails" "$OUT"
expect_exit 2 sandshim doctor --frobnicate
expect_exit 2 sandshim doctor some-container

# ---------------------------------------------------------------------------------------------
# --containers

check "--containers: a running default sandshim container passes every check that applies"
# A fresh audit database: the one above was tampered with on purpose.
export SANDSHIM_AUDIT_DB=$T/state/containers.db
AUDIT_DBS+=("$SANDSHIM_AUDIT_DB")
# A long deadline: the checks below must find it running even on a loaded machine.
sandshim run --timeout 10m -- sh -c 'sleep 600' </dev/null >/dev/null 2>&1 &
sleeper=$!
BG_PIDS+=("$sleeper")
id=$(wait_for_running_container 120)
expect_exit 0 sandshim doctor --containers "sandshim-$id"
expect_contains "pass  sandshim-$id  5.4   not privileged: not privileged" "$OUT"
expect_contains "pass  sandshim-$id  5.31  engine socket not mounted" "$OUT"
expect_contains "pass  sandshim-$id  5.25  no-new-privileges: set" "$OUT"
expect_not_contains "fail  " "$OUT"
expect_contains "1 container(s) checked, 0 failed" "$OUT"
[[ $(grep -c "^pass  sandshim-$id " "$OUT") -ge 24 ]] || fail "fewer than 24 checks passed: $(cat "$OUT")"

check "--containers --json: passed, with every check"
expect_exit 0 sandshim doctor --containers --json "sandshim-$id"
"$HOST_PY" - "$OUT" <<'EOF' || fail "doctor --containers --json: see above"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["ok"] is True, doc
[container] = doc["containers"]
assert container["passed"] is True, container
statuses = {check["id"]: check["status"] for check in container["checks"]}
assert statuses["5.4"] == "pass" and statuses["5.12"] == "pass" and statuses["5.28"] == "pass", statuses
assert set(statuses.values()) <= {"pass", "n/a"}, statuses
EOF

check "control: a hand-made privileged container with the docker socket and sandshim's label fails"
# Created, not started: this host's engine cannot start a privileged container (its runc may not
# apply every capability here), and inspecting it needs no process.
control=sandshim-doctor-control-$$
EXTRA_CONTAINERS+=("$control")
"$DOCKER" create --name "$control" --privileged -v /var/run/docker.sock:/var/run/docker.sock \
    --label org.sandshim.run=doctor-control --network none sandshim/sh:bookworm sleep 600 >/dev/null
expect_exit 1 sandshim doctor --containers "$control"
expect_contains "fail  $control  5.4   not privileged: privileged" "$OUT"
expect_contains "fail  $control  5.31  engine socket not mounted: mounts the engine socket /var/run/docker.sock" "$OUT"
expect_contains "fail  $control  5.12  read-only root" "$OUT"
expect_contains "fail  $control  5.10  memory limited: no memory limit" "$OUT"
expect_contains "fail  $control  5.28  pids limited: no pids limit" "$OUT"
expect_contains "fail  $control  5.25  no-new-privileges" "$OUT"
expect_contains "fail  $control  4.1   non-root user" "$OUT"
expect_contains "1 container(s) checked, 1 failed" "$OUT"

check "control: a running hand-made container (SYS_ADMIN, docker socket) is found by the label and fails"
running_control=sandshim-doctor-running-control-$$
EXTRA_CONTAINERS+=("$running_control")
"$DOCKER" run -d --name "$running_control" --cap-add SYS_ADMIN \
    -v /var/run/docker.sock:/var/run/docker.sock --label org.sandshim.run=doctor-running-control \
    --network none --log-driver none sandshim/sh:bookworm sleep 600 >/dev/null
# Every running sandshim container on the engine (other suites' too): ours must be among them.
expect_exit 1 sandshim doctor --containers
expect_contains "fail  $running_control  5.3   capabilities restricted: adds CAP_SYS_ADMIN" "$OUT"
expect_contains "fail  $running_control  5.31  engine socket not mounted" "$OUT"
expect_contains "pass  sandshim-$id  5.4 " "$OUT"
expect_not_contains "$control " "$OUT" # created, not running: only named ones are inspected

check "--containers with an unknown name: one clear line, 125"
expect_exit 125 sandshim doctor --containers sandshim-no-such-container-$$
expect_contains "sandshim: cannot inspect sandshim-no-such-container-$$: " "$ERR"

"$DOCKER" rm --force "sandshim-$id" "$control" "$running_control" >/dev/null 2>&1
wait "$sleeper" 2>/dev/null || true
suite_done
