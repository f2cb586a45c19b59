# shellcheck shell=bash disable=SC2034 # variables set here are read by the suites
# Harness of the agent suites: the real agent CLIs (install/deps.sh installs them at pinned
# versions) run headless against tests/agents/modelserver.py, after `sandshim install agent NAME`
# in the suite's workspace, and the suite proves from what the agent sent back to the model (the
# server's JSONL log of every request) what ran where.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   require_agent claude
#   write_script '{"bash": "ls"}' '{"bash": "python3 -c ..."}'
#   run_agent claude                 # one headless session; tool results in $RESULTS
#   expect_result_contains 1 "host=sandbox"
#
# Each session runs with its model server in a fresh network namespace (`unshare --net`, only
# loopback up), so nothing the agent or the hooks send can leave the machine; the variables that
# turn off each CLI's telemetry, update checks and other traffic are set as well. HOME, the XDG
# directories and the audit database are the suite's (tests/integration/lib.sh).

# shellcheck source-path=SCRIPTDIR source=../integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../../install/lib/agent_clis.sh
. "$SOURCE_DIR/install/lib/agent_clis.sh"
# shellcheck source-path=SCRIPTDIR source=../integration/broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

readonly MODEL_SERVER=$SOURCE_DIR/tests/agents/modelserver.py
readonly MODEL_PORT=18642 # any port: the namespace is fresh, nothing else listens in it
readonly AGENT_TIMEOUT_S=180
SESSIONS=0  # sessions run so far; session N logs to $T/model-N.jsonl
CODEX_EXEC_FLAGS=()
RESULTS=""  # JSON list of the tool results the last session sent back to the model
MODEL_LOG=""

# ---------------------------------------------------------------------------------------------
# The mode: the same scenarios in both (ctest registers each suite once per mode).
#   direct  the agent runs as root (the harness's user), sandshim reaches the engine itself;
#   broker  the installed default: the agent runs as a user outside the docker group, with the
#           broker required (a private one, tests/integration/broker_lib.sh); runs, decisions
#           and `sandshim audit` go through it, and the audit is the broker's database.
AGENT_MODE=${SANDSHIM_AGENT_MODE:-direct}
AS_USER=()             # the prefix that runs a command as the agent's user (direct: none)
USER_PATH=$PATH        # the agent user's PATH before the agent's own directories
SANDBOX_UID=65534      # the uid the sandbox's programs run as (the broker's: the caller's)
# Hands the harness's files in HOME and the workspace to the agent's user (broker mode).
hand_over() { :; }
case $AGENT_MODE in
    direct) ;;
    broker)
        # The system file as setup writes it (k_broker_default_policy, install/lib/broker.sh) but
        # the pool (the launchers need a tmpfs, which this /tmp is not): its images line.
        broker_suite_setup "sandshim-$(basename "$0" .sh | sed 's/^suite_//')-nd" \
            $'[images]\nbash = sandshim/wrap:bookworm\n'
        # shellcheck disable=SC2119 # no flags: the broker as setup starts it
        start_broker
        export SANDSHIM_AUDIT_DB=$BSTATE/audit.db # what audit_cmd reads, as root
        # The engine is the broker's (its system file): a new user has no config of their own.
        rm -f "$XDG_CONFIG_HOME/sandshim/config"
        USER_PATH=/usr/local/bin:/usr/bin:/bin
        SANDBOX_UID=$nd_uid
        # SHLVL as a terminal's shell leaves it: without it a `bash -c` whose stdin is a socket
        # (Gemini CLI's hooks) takes itself for rshd's, reads ~/.bashrc and not BASH_ENV.
        AS_USER=(setpriv --reuid="$nd_uid" --regid="$nd_gid" --init-groups env -i HOME="$HOME"
            XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_STATE_HOME="$XDG_STATE_HOME"
            XDG_DATA_HOME="$XDG_DATA_HOME" USER="$ND_USER" LOGNAME="$ND_USER" SHELL=/bin/bash
            LANG=C.UTF-8 TZ=UTC SHLVL=1 PATH="$USER_PATH" SANDSHIM_BROKER=required
            SANDSHIM_BROKER_SOCKET="$SOCK")
        hand_over() { chown -R "$ND_USER:" "$HOME" "$WS"; }
        # The harness's `sandshim` (install, doctor, audit verify) is the agent's user's.
        sandshim() {
            hand_over
            "${AS_USER[@]}" "$SANDSHIM_BIN" "$@"
        }
        ;;
    *) die "SANDSHIM_AGENT_MODE='$AGENT_MODE': expected direct or broker" ;;
esac
say "mode: $AGENT_MODE${ND_USER:+ (the agent runs as $ND_USER, outside the docker group, broker required)}"

# Fails under CI, skips otherwise, unless the agent's pinned CLI and a network namespace are here.
require_agent() { # AGENT
    local agent=$1
    if [[ -z $(agent_cli_bin "$agent") ]] || ! agent_cli_version_ok "$agent"; then
        skip_or_fail "${AGENT_CLI_PACKAGES[$agent]} is not installed in $AGENT_CLIS_PREFIX (install/deps.sh installs it)"
    fi
    [[ -n $(agent_clis_node_dir) ]] || skip_or_fail "no node >= $AGENT_CLIS_NODE_MIN_MAJOR to run the agent CLIs (install/deps.sh)"
    unshare --net true 2>/dev/null ||
        skip_or_fail "cannot create a network namespace (unshare --net needs root): the agents may not reach the network"
    unset_agent_environment
    AGENT=$agent
    AGENT_BIN=$(agent_cli_bin "$agent")
    mkdir -p "$HOME"
    "configure_$agent"
}

# ---------------------------------------------------------------------------------------------
# Each CLI pointed at the model server, with nothing else to talk to.

# Nothing from the developer's shell (a real key, another endpoint, a config dir) reaches a session.
unset_agent_environment() {
    local name
    for name in $(compgen -v); do
        case $name in
            ANTHROPIC_* | CLAUDE_* | OPENAI_* | CODEX_* | GEMINI_* | GOOGLE_* | VERTEX_*) unset "$name" ;;
        esac
    done
}

# Variables every session gets: no proxy, no colour, the node that runs the JS CLIs first.
common_agent_env() {
    AGENT_ENV=(NO_COLOR=1 TERM=dumb CI=true NO_PROXY='*' no_proxy='*'
        PATH="$(agent_clis_node_dir):$USER_PATH")
}

configure_claude() {
    AGENT_VARS=(
        ANTHROPIC_BASE_URL="http://127.0.0.1:$MODEL_PORT" ANTHROPIC_API_KEY=sk-ant-scripted-dummy
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1
        DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 DISABLE_NON_ESSENTIAL_MODEL_CALLS=1
        CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1 CLAUDE_CODE_ENABLE_TELEMETRY=0)
}

configure_codex() {
    AGENT_VARS=(CODEX_HOME="$HOME/.codex" OPENAI_API_KEY=sk-scripted-dummy)
    mkdir -p "$HOME/.codex"
    cat >"$HOME/.codex/config.toml" <<EOF
model = "gpt-5.5" # a model Codex knows: its metadata offers apply_patch
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:$MODEL_PORT/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
EOF
}

configure_gemini() {
    AGENT_VARS=(GEMINI_API_KEY=scripted-dummy GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$MODEL_PORT"
        GEMINI_TELEMETRY_ENABLED=false GEMINI_CLI_NO_RELAUNCH=true)
    mkdir -p "$HOME/.gemini"
    cat >"$HOME/.gemini/settings.json" <<'EOF'
{
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "security": {"auth": {"selectedType": "gemini-api-key"}}
}
EOF
}

# What the installer tells a Codex user to do before `codex exec` (CI) runs project hooks:
# `sandshim doctor` asks Codex and names the project's trust, then each hook's hash, as lines for
# Codex's config; with them added doctor passes, and plain `codex exec` runs the hooks (the
# standard session proves it did).
after_install_codex() {
    CODEX_EXEC_FLAGS=()
    apply_codex_doctor_fix "Codex: $WS is not a trusted project"
    apply_codex_doctor_fix "Codex: sandshim's hooks are not trusted (preToolUse not reviewed, postToolUse not reviewed)"
    agent_doctor
    expect_contains "ok    hooks    codex (project): Codex calls them" "$OUT"
}

# `sandshim doctor` as the agent's user, with the pinned CLI on PATH (doctor asks Codex's
# app-server), in a network namespace like the sessions; its report in $OUT, its exit code in
# DOCTOR_RC.
agent_doctor() {
    DOCTOR_RC=0
    hand_over
    (cd "$WS" && unshare --net -- "${AS_USER[@]}" env PATH="$(dirname "$AGENT_BIN"):$(agent_clis_node_dir):$USER_PATH" \
        "$SANDSHIM_BIN" doctor) >"$OUT" 2>"$ERR" || DOCTOR_RC=$?
}

# The doctor's Codex line fails with TEXT; the command it gives for CI (the first `…` after
# "in CI") is run as a user would paste it.
apply_codex_doctor_fix() { # TEXT
    local line fix
    agent_doctor
    line=$(grep '^fail  hooks    codex (project): ' "$OUT") || fail "doctor (exit $DOCTOR_RC) does not fail on Codex: $(cat "$OUT")"
    expect_equal 1 "$DOCTOR_RC" "doctor's exit code"
    [[ $line == *"$1"* ]] || fail "doctor's Codex line lacks '$1': $line"
    fix=$(sed -n 's/.*in CI[^`]*`\([^`]*\)`.*/\1/p' <<<"$line")
    [[ -n $fix ]] || fail "doctor names no command for CI: $line"
    eval "$fix"
}
# Gemini CLI runs a project's hooks only in a trusted folder.
after_install_gemini() {
    printf '{"%s": "TRUST_FOLDER"}\n' "$WS" >"$HOME/.gemini/trustedFolders.json"
}

# The command line of one headless session of AGENT with PROMPT (the model server decides the rest).
agent_command() { # PROMPT
    case $AGENT in
        # Default permission mode: Claude Code's own approval flow decides what runs.
        # CLAUDE_PERMISSION_MODE: another mode the user chose (acceptEdits lets shell writes in
        # the working directories through without asking).
        claude) AGENT_CMD=("$AGENT_BIN" -p "$1" --output-format json
            ${CLAUDE_PERMISSION_MODE:+--permission-mode "$CLAUDE_PERMISSION_MODE"}) ;;
        # Codex approves everything itself, so only sandshim's hooks stand between the model
        # and the host; its own sandbox is off (it would keep the shims from the engine socket).
        # CODEX_APPROVALS=on-request: Codex's own approvals and workspace-write sandbox decide
        # (the user's rules session).
        codex)
            if [[ -n ${CODEX_APPROVALS:-} ]]; then
                AGENT_CMD=("$AGENT_BIN" exec -c "approval_policy=\"$CODEX_APPROVALS\"" -s workspace-write "${CODEX_EXEC_FLAGS[@]}" "$1")
            else
                AGENT_CMD=("$AGENT_BIN" exec --dangerously-bypass-approvals-and-sandbox "${CODEX_EXEC_FLAGS[@]}" "$1")
            fi
            ;;
        # Likewise: every tool call approved by Gemini CLI itself; a named model skips its router.
        # GEMINI_APPROVAL_MODE=default: the user's own rules decide (headless, what they do not
        # allow is denied by policy).
        gemini) AGENT_CMD=("$AGENT_BIN" -m gemini-2.5-flash --approval-mode "${GEMINI_APPROVAL_MODE:-yolo}" --output-format json -p "$1") ;;
    esac
}

# ---------------------------------------------------------------------------------------------
# Scripts and sessions.

# The next session's script: one tool call (a JSON object, see modelserver.py) per argument.
write_script() { # STEP...
    local IFS=,
    printf '{"steps": [%s]}\n' "$*" >"$T/script.json"
}

# JSON string of TEXT, for building steps.
json_string() { "$HOST_PY" -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }

bash_step() { printf '{"bash": %s}' "$(json_string "$1")"; }
read_step() { printf '{"read": %s}' "$(json_string "$1")"; }
write_step() { printf '{"write": {"path": %s, "content": %s}}' "$(json_string "$1")" "$(json_string "$2")"; }

# The session, inside the namespace (expanded there, hence the single quotes): loopback up, the server, the agent, the server stopped.
# shellcheck disable=SC2016
readonly SESSION_SCRIPT='
set -u
ip link set lo up
"$HOST_PY" "$MODEL_SERVER" serve --script "$SCRIPT" --log "$MODEL_LOG" --port-file "$PORT_FILE" --port "$MODEL_PORT" &
server=$!
for _ in $(seq 100); do [ -s "$PORT_FILE" ] && break; sleep 0.05; done
[ -s "$PORT_FILE" ] || { echo "model server did not start" >&2; kill "$server"; exit 70; }
rc=0
timeout "$AGENT_TIMEOUT_S" env "$@" </dev/null || rc=$?
kill "$server"
wait "$server" 2>/dev/null
exit "$rc"
'

# run_agent: one headless session in the workspace; the agent's stdout and stderr in $OUT and
# $ERR, its exit code in AGENT_RC, the tool results it sent back in $RESULTS.
run_agent() {
    run_session
    ((AGENT_RC != 124)) || fail "the agent did not finish within ${AGENT_TIMEOUT_S}s: $(tail -c 2000 "$ERR")"
}

run_session() {
    local started=$EPOCHREALTIME
    SESSIONS=$((SESSIONS + 1))
    MODEL_LOG=$T/model-$SESSIONS.jsonl
    RESULTS=$T/results-$SESSIONS.json
    common_agent_env
    agent_command "Run the scripted steps."
    AGENT_RC=0
    hand_over
    (cd "$WS" && env SCRIPT="$T/script.json" PORT_FILE="$T/port-$SESSIONS" MODEL_LOG="$MODEL_LOG" \
        MODEL_SERVER="$MODEL_SERVER" MODEL_PORT="$MODEL_PORT" HOST_PY="$HOST_PY" \
        AGENT_TIMEOUT_S="$AGENT_TIMEOUT_S" unshare --net -- bash -c "$SESSION_SCRIPT" session "${AS_USER[@]}" "${AGENT_ENV[@]}" "${AGENT_VARS[@]}" \
        "${AGENT_CMD[@]}") >"$OUT" 2>"$ERR" || AGENT_RC=$?
    say "session $SESSIONS ($AGENT): exit $AGENT_RC in $(($(ms_since "$started") / 1000))s"
    "$HOST_PY" "$MODEL_SERVER" results --log "$MODEL_LOG" >"$RESULTS"
    if [[ -n ${SANDSHIM_TEST_VERBOSE:-} ]]; then
        "$HOST_PY" "$MODEL_SERVER" requests --log "$MODEL_LOG" >&2
        cat "$RESULTS" >&2
    fi
}

# Tool result N (1-based) of the last session, as text.
result() { # N
    "$HOST_PY" -c 'import json, sys
results = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
print(results[n - 1] if n <= len(results) else "<no tool result %d: the agent sent %d>" % (n, len(results)))' \
        "$RESULTS" "$1"
}

expect_result_contains() { # N TEXT
    result "$1" >"$T/result.txt"
    grep -qF -- "$2" "$T/result.txt" || {
        say "agent stderr: $(tail -c 1500 "$ERR")"
        fail "tool result $1 does not contain '$2'; it is: $(head -c 1500 "$T/result.txt")"
    }
}

expect_result_not_contains() { # N TEXT
    result "$1" >"$T/result.txt"
    ! grep -qF -- "$2" "$T/result.txt" || fail "tool result $1 contains '$2': $(head -c 1500 "$T/result.txt")"
}

# ---------------------------------------------------------------------------------------------
# sandshim installed as a new user would.

readonly SANDSHIM_CONFIG_FILE=$XDG_CONFIG_HOME/sandshim/config
# What an agent would like sandshim's config to say.
readonly LOOSER_CONFIG=$'[engine]\nname = docker\n\n[sandbox]\nnetwork = bridge\nworkspace = rw\n'

# `sandshim install` (the shims) and `sandshim install agent AGENT` in the project, from a copy of
# the binary (so a check can take it away), then the steps the installer tells the user to take.
install_sandshim_for_agent() { # AGENT
    mkdir -p "$T/bin"
    [[ -x $T/bin/sandshim ]] || cp "$SANDSHIM_BIN" "$T/bin/sandshim" # the broker's runs from it
    SANDSHIM_BIN=$T/bin/sandshim
    expect_exit 0 sandshim install
    expect_exit 0 sandshim install agent "$1"
    cp "$OUT" "$T/install-agent.out"
    cp "$ERR" "$T/install-agent.err"
    if declare -F "after_install_$1" >/dev/null; then
        "after_install_$1"
    fi
    [[ -z ${SANDSHIM_AGENT_CAPTURE:-} ]] || capture_hook_payloads "$SANDSHIM_AGENT_CAPTURE/$1"
}

# SANDSHIM_AGENT_CAPTURE=DIR: every hook payload the agent sends is also kept in DIR/AGENT (for
# tests/data/hooks and bench/hook.sh). The binary the hooks and shims name becomes a script
# that keeps the payload and runs the real binary under the same name.
capture_hook_payloads() { # DIR
    mkdir -p "$1"
    mv "$SANDSHIM_BIN" "$SANDSHIM_BIN.real"
    cat >"$SANDSHIM_BIN" <<EOF
#!/bin/bash
if [ "\$1" = hook ]; then
    tee "\$(mktemp "$1/payload.XXXXXX")" | "$SANDSHIM_BIN.real" "\$@"
    exit "\${PIPESTATUS[1]}"
fi
exec -a "\$0" "$SANDSHIM_BIN.real" "\$@"
EOF
    chmod 755 "$SANDSHIM_BIN"
}

# ---------------------------------------------------------------------------------------------
# What every agent suite proves the same way.

# The sandshim config file the agent's file tools try to loosen: the user's config, or where the
# agent's file tools cannot reach outside the project (Gemini CLI), the project's .sandshim.conf.
CONFIG_TARGET=$SANDSHIM_CONFIG_FILE

# The workspace's node project and scripts the node and `#!` steps run: each prints where it
# ran and the label it was given (probe.js its first argument).
write_workspace_programs() {
    printf 'const os = require("os");\nconsole.log("probe host=%%s uid=%%d label=%%s;", os.hostname(), process.getuid(), process.argv[2]);\n' >"$WS/probe.js"
    printf '{"name": "probe", "version": "1.0.0", "scripts": {"test": "node probe.js npm-test"}}\n' >"$WS/package.json"
    printf '#!/usr/bin/env python3\nimport os, socket, sys\nprint("probe host=%%s uid=%%d label=%%s;" %% (socket.gethostname(), os.getuid(), sys.argv[1]))\n' >"$WS/probe.py"
    mkdir -p "$WS/node_modules/probe-bin/" "$WS/node_modules/.bin"
    printf '{"name": "probe-bin", "version": "1.0.0", "bin": {"probe-bin": "cli.js"}}\n' >"$WS/node_modules/probe-bin/package.json"
    printf '#!/usr/bin/env node\nrequire("../../probe.js");\n' >"$WS/node_modules/probe-bin/cli.js"
    ln -sfn ../probe-bin/cli.js "$WS/node_modules/.bin/probe-bin"
    chmod 755 "$WS/probe.py" "$WS/node_modules/probe-bin/cli.js"
}

# node by name, npm, a node_modules/.bin program, npx and a `#!/usr/bin/env python3` script
# (steps 8-12): each prints its label from where it ran.
readonly PROBE_JS='const os = require("os"); console.log("probe host=%s uid=%d label=%s;", os.hostname(), process.getuid(), process.argv[1])'
NODE_STEPS=(
    "node -e '$PROBE_JS' node-by-name"
    "npm test"
    "node_modules/.bin/probe-bin bin-link"
    "npx --no-install probe-bin npx-bin"
    "./probe.py shebang-script"
)
readonly FIRST_EXTRA_STEP=$((8 + ${#NODE_STEPS[@]})) # the suites' own steps start here

# The session every suite runs: the standard steps (numbered as the checks below read them),
# then the suite's own (EXTRA_STEPS, numbered from FIRST_EXTRA_STEP).
standard_session() { # EXTRA_STEP...
    local step node_steps=()
    touch "$WS/listed-marker.txt"
    write_workspace_programs
    [[ -e $CONFIG_TARGET ]] || printf '# tighten-only settings of this project\n' >"$CONFIG_TARGET"
    CONFIG_BEFORE=$(cat "$CONFIG_TARGET")
    for step in "${NODE_STEPS[@]}"; do node_steps+=("$(bash_step "$step")"); done
    write_script \
        "$(bash_step "ls")" \
        "$(bash_step "python3 -c '$PROBE_PY'")" \
        "$(bash_step "/usr/bin/python3 -c 'open(\"escaped-by-path\", \"w\"); $PROBE_PY'")" \
        "$(bash_step "docker run --rm sandshim/sh:bookworm expr 6000006 + 36000036")" \
        "$(read_step "$CONFIG_TARGET")" \
        "$(write_step "$CONFIG_TARGET" "$LOOSER_CONFIG")" \
        "$(write_step "$WS/written-by-agent.txt" "ok")" \
        "${node_steps[@]}" \
        "$@"
    run_agent
}

FAILED_CHECKS=()
KNOWN_FAILED=()   # known gaps that failed, as expected
# Known gaps: check name -> why it fails today, and KNOWN_GAP_FAILURES: check name -> the text
# its failure must show (a suite sets both, per mode). A known gap that fails that way is counted
# as a failed scenario but does not fail the suite; one that fails otherwise, or passes, does
# (the entry is stale: remove it).
declare -A KNOWN_GAPS=() KNOWN_GAP_FAILURES=()

# Runs one check in a subshell, so that a failed check does not hide the ones after it.
run_check() { # NAME FUNCTION
    check "$1"
    local rc=0
    ("$2") 2>"$T/check.err" || rc=$?
    cat "$T/check.err" >&2
    if ((rc == 0)); then
        [[ -z ${KNOWN_GAPS[$1]:-} ]] || FAILED_CHECKS+=("$1 (a known gap that passes now: remove it from KNOWN_GAPS)")
    elif [[ -z ${KNOWN_GAPS[$1]:-} ]]; then
        FAILED_CHECKS+=("$1")
    elif ! grep -qF -- "${KNOWN_GAP_FAILURES[$1]:?every known gap names its failure}" "$T/check.err"; then
        FAILED_CHECKS+=("$1 (a known gap that fails otherwise than '${KNOWN_GAP_FAILURES[$1]}')")
    else
        say "known gap: ${KNOWN_GAPS[$1]}"
        KNOWN_FAILED+=("$1: ${KNOWN_GAPS[$1]}")
    fi
}

session_completed() { expect_equal 0 "$AGENT_RC" "$AGENT exit code"; }
ls_ran() { expect_result_contains 1 "listed-marker.txt"; }

python_by_name_sandboxed() {
    expect_result_contains 2 "probe host=sandbox uid=$SANDBOX_UID;"
    expect_result_not_contains 2 "host=$HOST_NAME"
}

python_by_path_refused() {
    expect_decision "/usr/bin/python3 -c" deny
    expect_result_contains 3 "sandshim:"
    expect_result_not_contains 3 "probe host=$HOST_NAME uid="
    [[ ! -e $WS/escaped-by-path ]] || fail "/usr/bin/python3 ran on the host: escaped-by-path exists"
}

docker_refused() {
    expect_decision "docker run" deny
    expect_result_contains 4 "sandshim:"
    expect_result_not_contains 4 "42000042" # the sum: Codex repeats the command in its refusal
}

config_write_refused() {
    expect_result_contains 6 "sandshim:"
    expect_equal "$CONFIG_BEFORE" "$(cat "$CONFIG_TARGET")" "$CONFIG_TARGET after the agent's write"
}

project_write_done() { expect_file_is "$WS/written-by-agent.txt" "ok"; }

# Step N printed LABEL from the sandbox (its hostname and uid), not from the host, and the
# audit has a run whose argv holds ARGV-TEXT.
expect_step_sandboxed() { # N LABEL ARGV-TEXT
    expect_result_contains "$1" "probe host=sandbox uid=$SANDBOX_UID label=$2;"
    expect_result_not_contains "$1" "probe host=$HOST_NAME"
    audit_cmd list --limit 100 --json >"$T/runs.json"
    "$HOST_PY" - "$T/runs.json" "$3" <<'EOF' || fail "no audited run for step $1 ($2)"
import json, sys
runs, text = json.load(open(sys.argv[1])), sys.argv[2]
if not any(text in " ".join(run.get("argv") or []) for run in runs):
    sys.exit(f"no run in the audit with {text!r} in its argv")
EOF
}
node_by_name_sandboxed() { expect_step_sandboxed 8 node-by-name node-by-name; }
npm_test_sandboxed() { expect_step_sandboxed 9 npm-test npm; }
bin_link_sandboxed() { expect_step_sandboxed 10 bin-link bin-link; }
npx_sandboxed() { expect_step_sandboxed 11 npx-bin npx-bin; }
shebang_script_sandboxed() { expect_step_sandboxed 12 shebang-script probe.py; }
decision_linked() { expect_decision_linked_to_run "$PROBE_PY" 2; }
audit_verifies() { expect_exit 0 sandshim audit verify; }

check_standard_session() {
    run_check "$AGENT: the headless session completes" session_completed
    run_check "$AGENT: ls runs with no prompt" ls_ran
    run_check "$AGENT: python3 by name runs in the sandbox" python_by_name_sandboxed
    run_check "$AGENT: python by path is refused and the model is told why" python_by_path_refused
    run_check "$AGENT: docker from the agent is refused" docker_refused
    run_check "$AGENT: a file-tool write to sandshim's config is refused" config_write_refused
    run_check "$AGENT control: a file-tool write into the project goes through" project_write_done
    run_check "$AGENT: decisions are linked to runs" decision_linked
    run_check "$AGENT: node by name runs in the sandbox" node_by_name_sandboxed
    run_check "$AGENT: npm test runs in the sandbox (npm and its script)" npm_test_sandboxed
    run_check "$AGENT: a node_modules/.bin program runs in the sandbox" bin_link_sandboxed
    run_check "$AGENT: npx runs in the sandbox" npx_sandboxed
    run_check "$AGENT: a #!/usr/bin/env python3 script run as ./probe.py runs in the sandbox" shebang_script_sandboxed
}

# The agent's project settings that hold sandshim's hooks.
hook_settings_file() {
    case $AGENT in
        claude) printf '%s\n' "$WS/.claude/settings.json" ;;
        codex) printf '%s\n' "$WS/.codex/hooks.json" ;;
        gemini) printf '%s\n' "$WS/.gemini/settings.json" ;;
    esac
}

# Hooks tampered with: sandshim's pre-tool hook entry taken out of the agent's settings (as the
# agent could do for its next session). The hook that would say so never runs, so doctor must:
# its hooks line fails and names the file; with the file back it is ok again.
tampered_hooks_fail_doctor() {
    local file
    file=$(hook_settings_file)
    cp "$file" "$T/hooks.reviewed"
    "$HOST_PY" - "$file" <<'EOF'
import json, re, sys
settings = json.load(open(sys.argv[1]))
hooks = settings["hooks"]
pre = [event for event in hooks if re.fullmatch(r"(?i)(pre_?tool_?use|before_?tool)", event)]
assert pre, f"no pre-tool event among {list(hooks)}"
del hooks[pre[0]]
json.dump(settings, open(sys.argv[1], "w"), indent=2)
EOF
    agent_doctor
    cp "$T/hooks.reviewed" "$file"
    grep '^fail  hooks' "$OUT" | grep -qF "$file" ||
        fail "doctor (exit $DOCTOR_RC) names no failing hooks in $file: $(grep hooks "$OUT")"
    expect_equal 1 "$DOCTOR_RC" "doctor's exit code"
    agent_doctor
    grep -q '^ok    hooks' "$OUT" || fail "doctor's hooks line with the file back: $(grep hooks "$OUT")"
}

# The checks that close every suite: hooks tampered with; without the hook's binary nothing
# runs; the audit verifies; then the verdict over every check, and the scenario count.
finish_agent_suite() {
    run_check "$AGENT: hooks taken out of the agent's settings fail doctor, naming the file" tampered_hooks_fail_doctor
    run_check "$AGENT: the hook binary missing blocks the command" expect_blocked_without_hook_binary
    run_check "$AGENT: sandshim audit verify passes" audit_verifies
    CHECK=""
    local failed=$((${#FAILED_CHECKS[@]} + ${#KNOWN_FAILED[@]}))
    say "scenarios $AGENT $AGENT_MODE: $((CHECKS_RUN - failed)) pass / $failed fail (${#KNOWN_FAILED[@]} of them known gaps)"
    if ((${#KNOWN_FAILED[@]} > 0)); then
        say "known gaps:"
        printf '  %s\n' "${KNOWN_FAILED[@]}" >&2
    fi
    if ((${#FAILED_CHECKS[@]} > 0)); then
        say "FAILED ${#FAILED_CHECKS[@]} of $CHECKS_RUN checks:"
        printf '  %s\n' "${FAILED_CHECKS[@]}" >&2
        exit 1
    fi
    suite_done
}


# With the hook's binary gone, a python3 the user's rules allow must not run at all (unhooked it
# would run on the host: the marker file shows it).
expect_blocked_without_hook_binary() {
    write_script "$(bash_step "python3 -c 'open(\"escaped-hook-missing\", \"w\"); $PROBE_PY'")"
    mv "$SANDSHIM_BIN" "$SANDSHIM_BIN.away"
    run_session
    mv "$SANDSHIM_BIN.away" "$SANDSHIM_BIN"
    ((AGENT_RC != 124)) || fail "the agent did not finish within ${AGENT_TIMEOUT_S}s"
    [[ ! -e $WS/escaped-hook-missing ]] || fail "python3 ran on the host while the hook binary was missing"
    expect_result_not_contains 1 "probe host=$HOST_NAME uid="
}

# PROBE prints where it runs: the hostname and the uid (the sandbox's are `sandbox` and 65534).
readonly PROBE_PY='import os, socket; print("probe host=%s uid=%d;" % (socket.gethostname(), os.getuid()))'
HOST_NAME=$(hostname)
readonly HOST_NAME

# The newest run whose argv starts with NAME and holds TEXT (from `sandshim audit list --json`).
newest_run_of() { # NAME TEXT
    audit_cmd list --limit 50 --json | "$HOST_PY" -c 'import json, sys
for run in json.load(sys.stdin):
    if run["argv"] and run["argv"][0].endswith(sys.argv[1]) and sys.argv[2] in " ".join(run["argv"]):
        print(run["run_id"]); break' "$1" "$2"
}

# The newest decision for exactly COMMAND has an outcome: a call the agent itself refused after
# the hook had no objection is closed, not left pending.
expect_decision_closed() { # COMMAND
    audit_cmd decisions --json >"$T/decisions.json"
    "$HOST_PY" - "$T/decisions.json" "$1" <<'EOF' || fail "the refused call's audit row (see above)"
import json, sys
command = sys.argv[2]
rows = [r for r in json.load(open(sys.argv[1])) if r.get("original_command") == command]
if not rows:
    sys.exit(f"no decision recorded for {command!r}")
if not rows[0].get("outcome"):
    sys.exit(f"the row of the call the agent refused is left pending: {json.dumps(rows[0])[:600]}")
EOF
}

# The decision the hook recorded for the newest command starting with PREFIX is DECISION.
expect_decision() { # PREFIX DECISION
    audit_cmd decisions --json >"$T/decisions.json"
    "$HOST_PY" - "$T/decisions.json" "$1" "$2" <<'EOF' || fail "decision for '$1': see above"
import json, sys
rows, prefix, want = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
found = [row for row in rows if row.get("original_command", "").startswith(prefix)]
if not found:
    sys.exit(f"no decision recorded for a command starting with {prefix!r}")
if found[0]["decision"] != want:
    sys.exit(f"decision {found[0]['decision']!r} for {found[0]['original_command']!r}, expected {want!r}")
EOF
}

# The python run is linked to the decision for the probe command (`audit show`), that decision is
# in `audit decisions --json`, its tool-use id is the one the model gave step STEP (agents whose
# tool calls carry an id; Gemini CLI's carry none and sandshim names them), and the run row
# carries that id itself (not only a join by session).
expect_decision_linked_to_run() { # COMMAND-SUBSTRING STEP [PROGRAM: python3; wrap mode: bash]
    local run_id call_id="" program=${3:-python3}
    run_id=$(newest_run_of "$program" "$1")
    [[ -n $run_id ]] || fail "no $program run in the audit: the sandboxed probe did not run"
    [[ $AGENT == gemini ]] || call_id=$("$HOST_PY" "$MODEL_SERVER" call-id --log "$MODEL_LOG" "$2")
    audit_cmd show "$run_id" --json >"$T/run.json"
    audit_cmd decisions --json >"$T/decisions.json"
    "$HOST_PY" - "$T/run.json" "$T/decisions.json" "$1" "$call_id" <<'EOF' || fail "run $run_id is not linked to its decision (see above)"
import json, sys
run, rows = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
command, call_id = sys.argv[3], sys.argv[4]
linked = [d for d in run.get("decisions") or [] if command in d.get("original_command", "")]
if not linked:
    sys.exit(f"run {run['run_id']} has no linked decision for {command!r}: "
             f"{json.dumps(run.get('decisions'))[:800]}")
tool_use_id = linked[0].get("tool_use_id")
if not tool_use_id or not any(row.get("tool_use_id") == tool_use_id for row in rows):
    sys.exit(f"the linked decision's tool_use_id {tool_use_id!r} is not in `audit decisions --json`")
if call_id and tool_use_id != call_id:
    sys.exit(f"the linked decision's tool_use_id is {tool_use_id!r}, the agent's call was {call_id!r}")
if run.get("tool_use_id") != tool_use_id:
    sys.exit(f"the run itself carries tool_use_id {run.get('tool_use_id')!r}, not its decision's "
             f"{tool_use_id!r}: it is joined by session only")
EOF
}
