# shellcheck shell=bash disable=SC2034 # variables set here are read by the suites
# Shared harness of the integration suites: they drive the real sandshim binary against the real
# engine. A suite sources this file, then writes one block per property:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   check "the workspace is read-only"
#   expect_exit 73 sandshim run -- sh -c 'touch f && exit 42 || exit 73'
#   expect_contains "Read-only file system" "$ERR"
#   ...
#   suite_done
#
# Environment: SANDSHIM_BIN (the binary; default $SANDSHIM_SOURCE_DIR/build/sandshim),
# SANDSHIM_SOURCE_DIR, SANDSHIM_TEST_ENGINE (docker or podman, default docker: the engine the
# suite's runs use, written as engine.name into the suite's user config; write that file with
# `write_user_config`, never by hand), CI (true: a missing engine fails instead of skipping),
# SANDSHIM_TEST_VERBOSE (set -x), SANDSHIM_TEST_KEEP (keep the test directory even on success),
# SANDSHIM_TEST_POOL (N: the warm variant, see warm_variant below).
#
# Each suite gets its own directory (kept when it fails, path printed) holding HOME, the XDG
# directories, the audit database and a git workspace, so nothing outside it is read or written.
# Every container the suite's runs created is named by a run id in its audit database (the row is
# written before the container starts): the exit trap removes whatever is left of them, and
# `assert_no_sandshim_containers` fails if any is still there.
#
# Sentinel exit codes: 42 and 73, which collide with nothing sandshim or the engine returns
# (0, 1, 124, 125, 126, 127, 137, 128+N).

set -Eeuo pipefail

# testuser.sh (and the install/ libraries it pulls in) define say/warn/die: source it before ours.
# shellcheck source=../../install/lib/testuser.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/install/lib/testuser.sh"

SUITE=$(basename "$0" .sh)
readonly SUITE
readonly SOURCE_DIR=${SANDSHIM_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# The harness's own python: absolute, so a shim directory first on PATH never intercepts it.
HOST_PY=$(command -v /usr/bin/python3 || command -v python3 || true)
readonly HOST_PY
readonly EXIT_SKIP=77

say() { printf '%s: %s\n' "$SUITE" "$*" >&2; }
warn() { say "warning: $*"; }
die() {
    say "FAIL: ${CHECK:-setup}: $*"
    exit 1
}
fail() { die "$@"; }

# An expectation (expect_*) that does not hold inside a check is said and recorded, and the suite
# goes on to its next expectation, so one run reports every one that fails; the suite then fails
# (suite_done, or the exit trap with the list). In setup, in a subshell (whose record would be
# lost: it exits 1 instead, as before) and wherever `fail` is called (a wait past its deadline),
# the suite stops at once.
MISSED=()
miss() {
    if [[ -z ${CHECK:-} ]] || ((BASH_SUBSHELL > 0)); then
        die "$@"
    fi
    say "FAIL: $CHECK: $*"
    MISSED+=("$CHECK: $*")
}
# Lists what did not hold, once; true when something did not.
report_missed() {
    ((${#MISSED[@]} > 0)) || return 1
    say "FAILED: ${#MISSED[@]} expectation(s) did not hold:"
    local missed
    for missed in "${MISSED[@]}"; do
        say "  $missed"
    done
    MISSED=()
}

# Skips outside CI; under CI=true a skip would hide a broken setup, so it fails.
skip_or_fail() {
    if [[ ${CI:-} == true ]]; then
        die "$* (CI=true: integration tests may not skip)"
    fi
    say "SKIP: $*"
    exit "$EXIT_SKIP"
}

[[ -n ${SANDSHIM_TEST_VERBOSE:-} ]] && set -x
trap 'say "FAIL: ${CHECK:-setup}: line $LINENO: command exited with $?: $BASH_COMMAND"' ERR

# ---------------------------------------------------------------------------------------------
# Bookkeeping: checks, background processes, containers, cleanup.

CHECK=""
CHECKS_RUN=0
SUITE_STARTED=$EPOCHREALTIME
T=""
AUDIT_DBS=()        # every database this suite's runs write to
EXTRA_CONTAINERS=() # containers the suite made by hand
BG_PIDS=()          # background processes the suite started

# Starts one property's block; its name prefixes every failure.
check() {
    CHECK=$*
    CHECKS_RUN=$((CHECKS_RUN + 1))
    say "--- $CHECK"
}

ms_since() { # EPOCHREALTIME value -> milliseconds since then
    local now=$EPOCHREALTIME
    echo $(((${now/./} - ${1/./}) / 1000))
}

# Names of the containers this suite's runs were given (whether they still exist or not).
suite_container_names() {
    local db
    for db in "${AUDIT_DBS[@]}"; do
        [[ -s $db ]] || continue
        "$SANDSHIM_BIN" audit sql "SELECT run_id FROM runs" --jsonl --db "$db" 2>/dev/null |
            "$HOST_PY" -c 'import json, sys
for line in sys.stdin:
    print("sandshim-" + json.loads(line)["run_id"])' ||
            return 1 # an unreadable audit must not turn "no container left" into a vacuous pass
    done
    if ((${#EXTRA_CONTAINERS[@]} > 0)); then
        printf '%s\n' "${EXTRA_CONTAINERS[@]}"
    fi
}

# sandshim containers (labelled org.sandshim.run) that belong to this suite and still exist.
suite_containers_left() {
    local names
    names=$(suite_container_names) || fail "cannot list this suite's runs from its audit database"
    names=$(sort -u <<<"$names")
    [[ -n $names ]] || return 0
    "$ENGINE_CLIENT" ps --all --filter label=org.sandshim.run --format '{{.Names}}' | sort -u |
        comm -12 - <(printf '%s\n' "$names")
}

# None of this suite's containers is left: removals still in progress (a run returns at its
# container's exit) get 10 s, then whatever is there is a leak.
assert_no_sandshim_containers() {
    local left deadline=$((SECONDS + 10))
    left=$(suite_containers_left)
    while [[ -n $left ]] && ((SECONDS < deadline)); do
        sleep 0.2
        left=$(suite_containers_left)
    done
    [[ -z $left ]] || fail "containers left behind: $(echo "$left" | tr '\n' ' ')"
}

# Ends the suite's own background processes: only those bash still knows as running, so a pid
# the system has since reused is never signalled.
stop_background() {
    local pid running
    running=" $(jobs -pr | tr '\n' ' ') "
    for pid in "${BG_PIDS[@]}"; do
        if [[ $running == *" $pid "* ]]; then
            kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
        fi
    done
}

# Paths outside $T that a suite made (a workspace one level below /): removed at exit, whatever
# the outcome.
REMOVE_AT_EXIT=()

cleanup() {
    local rc=$? left
    set +e
    trap - ERR
    if report_missed && ((rc == 0 || rc == EXIT_SKIP)); then
        rc=1
    fi
    ((${#REMOVE_AT_EXIT[@]} == 0)) || rm -rf "${REMOVE_AT_EXIT[@]}"
    [[ -n $T ]] || exit "$rc"
    stop_background
    drain_warm_pools
    if [[ -n ${ENGINE_CLIENT:-} ]]; then
        left=$(suite_containers_left)
        if [[ -n $left ]]; then
            # shellcheck disable=SC2086
            "$ENGINE_CLIENT" rm --force $left >/dev/null 2>&1
        fi
    fi
    if ((rc == 0 || rc == EXIT_SKIP)) && [[ -z ${SANDSHIM_TEST_KEEP:-} ]]; then
        rm -rf "$T"
    else
        say "test directory kept: $T"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

suite_done() {
    CHECK=""
    [[ -z ${SANDSHIM_TEST_POOL:-} ]] || assert_runs_were_warm
    assert_no_sandshim_containers
    if ((${#MISSED[@]} > 0)); then
        exit 1 # the exit trap lists them
    fi
    say "PASS: $CHECKS_RUN checks in $(($(ms_since "$SUITE_STARTED") / 1000))s"
}

# ---------------------------------------------------------------------------------------------
# Test directory, sandboxed environment, workspace.

if [[ -z ${SANDSHIM_BIN:-} ]]; then
    SANDSHIM_BIN=$SOURCE_DIR/build/sandshim
    [[ -x $SANDSHIM_BIN ]] || SANDSHIM_BIN=$SOURCE_DIR/build/cli/sandshim # older build trees
fi
[[ -x $SANDSHIM_BIN ]] || die "no sandshim binary at '$SANDSHIM_BIN'; build it or set SANDSHIM_BIN"
SANDSHIM_BIN=$(readlink -f "$SANDSHIM_BIN")
[[ -x $HOST_PY ]] || die "no python3 on the host (the harness parses sandshim's JSON with it)"

T=$(mktemp -d "${TMPDIR:-/tmp}/sandshim-itest-$SUITE.XXXXXX")
chmod 755 "$T" # a non-root test user, and the sandbox user 65534, must be able to pass through
readonly T
OUT=$T/last.out # stdout and stderr of the last expect_exit
ERR=$T/last.err

export HOME=$T/home
export XDG_CONFIG_HOME=$HOME/.config XDG_STATE_HOME=$HOME/.local/state XDG_DATA_HOME=$HOME/.local/share
export SANDSHIM_AUDIT_DB=$T/state/audit.db
AUDIT_DBS+=("$SANDSHIM_AUDIT_DB")
mkdir -p "$XDG_CONFIG_HOME/sandshim" "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$T/state"
# Nothing from the developer's shell steers sandshim or the harness's engine client.
unset SANDSHIM_CONFIG SANDSHIM_DRY_RUN SANDSHIM_AGENT SANDSHIM_SESSION_ID SANDSHIM_TOOL_USE_ID
unset DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG DOCKER_TLS_VERIFY DOCKER_CERT_PATH
unset CONTAINER_HOST CONTAINER_CONNECTION CONTAINERS_CONF
export LANG=C.UTF-8 TZ=UTC
if [[ -e /etc/sandshim/config ]]; then
    warn "/etc/sandshim/config exists and applies to every run of this suite"
fi

# A fresh git repository: the workspace sandshim mounts (it is the git root).
new_workspace() {
    local dir
    dir=$(mktemp -d "$T/ws.XXXXXX")
    chmod 755 "$dir"
    git -C "$dir" init -q
    printf '%s\n' "$dir"
}
WS=$(new_workspace)
readonly WS
cd "$WS"

# ---------------------------------------------------------------------------------------------
# Engine.

# ENGINE names the engine under test; ENGINE_CLIENT is its client, which the harness uses for its
# own container checks. DOCKER is the same client under its historical name (the suites' own
# `"$ENGINE_CLIENT" run ...` work with both clients).
ENGINE=${SANDSHIM_TEST_ENGINE:-docker}
case $ENGINE in
    docker | podman) ;;
    *) die "SANDSHIM_TEST_ENGINE='$ENGINE': expected docker or podman" ;;
esac
readonly ENGINE
ENGINE_CLIENT=$(command -v "$ENGINE" || true)
[[ -n $ENGINE_CLIENT ]] || skip_or_fail "no $ENGINE client on PATH"
DOCKER=$ENGINE_CLIENT
timeout 60 "$ENGINE_CLIENT" info >/dev/null 2>&1 || skip_or_fail "the $ENGINE engine does not answer ($ENGINE info)"
for image in sandshim/python:bookworm sandshim/node:bookworm sandshim/sh:bookworm; do
    "$ENGINE_CLIENT" image inspect "$image" >/dev/null 2>&1 ||
        skip_or_fail "image $image is missing from $ENGINE (build it with install/images.sh; the tests never pull)"
done

# Limits for the suites' own plain `run`s: as root, podman raises nofile and nproc to its defaults,
# which fails where its own hard limits are lower (docker accepts them too).
PLAIN_RUN_LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

# engine.api's line in the [engine] section, when SANDSHIM_TEST_ENGINE_API (on | off) sets it.
engine_api_line() { [[ -z ${SANDSHIM_TEST_ENGINE_API:-} ]] || printf 'api = %s\n' "$SANDSHIM_TEST_ENGINE_API"; }
# The suite's user config: engine.name first, then the settings read from stdin.
# SANDSHIM_TEST_RUNTIME (runsc) runs the whole suite under that OCI runtime (suite_gvisor.sh).
write_user_config() {
    {
        printf '[engine]\nname = %s\n' "$ENGINE"
        engine_api_line
        [[ -z ${SANDSHIM_TEST_RUNTIME:-} ]] || printf '[sandbox]\nruntime = %s\n' "$SANDSHIM_TEST_RUNTIME"
        cat
        [[ -z ${SANDSHIM_TEST_POOL:-} ]] ||
            printf '[pool]\nsize = %s\nstart = launcher\nidle_ttl = 10m\n' "$SANDSHIM_TEST_POOL"
    } >"$XDG_CONFIG_HOME/sandshim/config"
}
# Back to the engine setting alone.
reset_user_config() { write_user_config </dev/null; }
reset_user_config

# The warm variant (SANDSHIM_TEST_POOL=N, CTest's docker.warm.NAME): the whole suite runs with
# pool.size = N and pool.start = launcher, and every `sandshim run` first fills the pool it claims
# from (`pool fill` with the run's own options), so each run goes through the in-container
# launcher. suite_done then fails unless every run that started a command was warm and launched,
# but those the suite names in WARM_COLD_OK (an SQL condition on the runs table, e.g. the
# concurrent runs that outnumber the pool). Shim-mode runs (a link named sh) are not filled.
warm_variant() {
    local real=$SANDSHIM_BIN
    mkdir -p "$T/warm-bin"
    cat >"$T/warm-bin/sandshim" <<EOF
#!/usr/bin/env bash
if [[ \$(basename "\$0") == sandshim && \${1:-} == run ]]; then
    shift
    options=()
    while ((\$# > 0)) && [[ \$1 != -- ]]; do options+=("\$1"); shift; done
    shift
    # Not a run the pool can serve (an allowlist, a bad option): it is the run's to report.
    "$real" pool fill "\${options[@]}" -- "\$1" </dev/null >/dev/null 2>&1 || true
    exec -a "\$0" "$real" run "\${options[@]}" -- "\$@"
fi
exec -a "\$0" "$real" "\$@"
EOF
    chmod 755 "$T/warm-bin/sandshim"
    SANDSHIM_BIN=$T/warm-bin/sandshim
    WARM_REAL_BIN=$real
}
WARM_COLD_OK=${WARM_COLD_OK:-0}
[[ -z ${SANDSHIM_TEST_POOL:-} ]] || warm_variant

# Every run that started its command was warm, through the launcher (WARM_COLD_OK excepted).
assert_runs_were_warm() {
    local ran="status NOT IN ('refused', 'engine_error') AND container_name != ''" counts
    counts=$(audit_cmd sql "SELECT sum(warm = 1 AND engine_args LIKE '%\"launch\"%') AS launched,
        sum(warm = 1 AND engine_args NOT LIKE '%\"launch\"%') AS exec,
        sum(warm = 0 AND NOT ($WARM_COLD_OK)) AS cold,
        sum(warm = 0 AND ($WARM_COLD_OK)) AS cold_ok FROM runs WHERE $ran" --jsonl |
        "$HOST_PY" -c 'import json, sys; r = json.load(sys.stdin); print(*(r[k] or 0 for k in ("launched", "exec", "cold", "cold_ok")))')
    read -r launched exec cold cold_ok <<<"$counts"
    say "warm variant: $launched run(s) through the launcher, $exec through exec, $cold_ok cold as the suite allows, $cold cold"
    ((launched > 0)) || fail "warm variant: no run went through the launcher"
    ((cold == 0)) || fail "warm variant: $cold run(s) went cold: $(audit_cmd sql "SELECT run_id, argv, message FROM runs WHERE $ran AND warm = 0 AND NOT ($WARM_COLD_OK)" --jsonl | head -c 2000)"
}

# True when `SANDSHIM pool drain` found no warm container left to remove.
pool_drain_found_none() { # SANDSHIM
    [[ $("$1" pool drain 2>/dev/null) == "removed 0 warm container(s)" ]]
}

# Drains until a drain finds nothing: a drain waits for the starts refills have planned, and a
# refill that plans late (its key was locked) is found by the next one. Teardown only: it warns,
# and the suite's container check says what was left.
drain_pools_of() { # SANDSHIM
    local deadline=$((SECONDS + 30))
    until pool_drain_found_none "$1"; do
        ((SECONDS < deadline)) || { warn "warm pools not empty after 30 s of drains"; return 0; }
        sleep 0.1
    done
}

# Warm containers wait idle past the suite: drain them.
drain_warm_pools() {
    [[ -z ${WARM_REAL_BIN:-} ]] || drain_pools_of "$WARM_REAL_BIN"
}

# Skips one check that cannot apply to this engine, saying why (never silently); the suite goes on.
skip_check_on() { # ENGINE REASON
    [[ $ENGINE == "$1" ]] || return 1
    say "SKIP on $ENGINE: ${CHECK:-this check}: $2"
}

sandshim() { "$SANDSHIM_BIN" "$@"; }

# ---------------------------------------------------------------------------------------------
# Assertions.

# expect_exit CODE CMD...: runs CMD with stdout in $OUT, stderr in $ERR and stdin from
# $EXPECT_STDIN (default /dev/null); fails unless it exits with CODE. Sets ELAPSED_MS.
expect_exit() {
    local want=$1 rc=0 started=$EPOCHREALTIME
    shift
    "$@" >"$OUT" 2>"$ERR" <"${EXPECT_STDIN:-/dev/null}" || rc=$?
    ELAPSED_MS=$(ms_since "$started")
    if [[ $rc != "$want" ]]; then
        say "command: $*"
        say "stdout: $(head -c 2000 "$OUT")"
        say "stderr: $(head -c 2000 "$ERR")"
        miss "expected exit code $want, got $rc"
    fi
}

expect_contains() { # TEXT FILE
    grep -qF -- "$1" "$2" || miss "$(basename "$2") does not contain '$1'; it has: $(head -c 2000 "$2")"
}

expect_not_contains() { # TEXT FILE
    ! grep -qF -- "$1" "$2" || miss "$(basename "$2") contains '$1': $(head -c 2000 "$2")"
}

expect_equal() { # EXPECTED ACTUAL [WHAT]
    [[ $1 == "$2" ]] || miss "${3:-value}: expected '$1', got '$2'"
}

# The first line of $ERR after a run killed at its deadline, then the limit hint. Its removal note
# is "the container was killed", or, when the engine is too busy to confirm the removal within the
# client's grace (other tiers beside this suite in CI), that the guardian keeps removing it.
expect_deadline_outcome() { # PROGRAM DEADLINE
    local line killed="the container was killed"
    local busy="the engine did not confirm the container's removal within 5s: its guardian keeps removing it until the engine answers"
    line=$(head -n 1 "$ERR")
    [[ $line == "sandshim: $1 ran past its deadline of $2 (sandbox.timeout); $killed" ||
        $line == "sandshim: $1 ran past its deadline of $2 (sandbox.timeout); $busy" ]] ||
        miss "the outcome line: expected '$1 ran past its deadline of $2 (sandbox.timeout); $killed' (or the busy engine's note), got '$line'"
    expect_contains "sandshim: limit hit: " "$ERR"
}

expect_file_is() { # FILE EXPECTED-CONTENT (compared without trailing newlines)
    expect_equal "$2" "$(cat "$1")" "$(basename "$1")"
}

expect_lines() { # N FILE
    local n
    n=$(wc -l <"$2")
    [[ $n == "$1" ]] || miss "$(basename "$2") has $n lines, expected $1: $(head -c 2000 "$2")"
}

# ---------------------------------------------------------------------------------------------
# The audit database, read through sandshim's own JSON.

# sandshim audit ARGS... on the suite's database; its stderr (e.g. a warning about a policy a
# check broke on purpose) is shown only when it fails.
audit_cmd() {
    "$SANDSHIM_BIN" audit "$@" --db "$SANDSHIM_AUDIT_DB" 2>"$T/audit.err" || {
        cat "$T/audit.err" >&2
        fail "sandshim audit $* failed"
    }
}

# Number of rows in the runs table (0 before the database exists).
run_count() {
    [[ -s $SANDSHIM_AUDIT_DB ]] || {
        echo 0
        return
    }
    audit_cmd sql "SELECT count(*) AS n FROM runs" --jsonl |
        "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)["n"])'
}

# Id of the newest run.
last_run_id() {
    audit_cmd list --limit 1 --json |
        "$HOST_PY" -c 'import json, sys
rows = json.load(sys.stdin)
print(rows[0]["run_id"] if rows else "")'
}

# audit_field RUN FIELD: one field of a run (RUN: an id, an id prefix, or `last`) from
# `sandshim audit show --json`. Strings print as they are, null as `null`, the rest as JSON.
audit_field() {
    local id=$1
    [[ $id != last ]] || id=$(last_run_id)
    [[ -n $id ]] || fail "no run in the audit database"
    audit_cmd show "$id" --json | "$HOST_PY" -c 'import json, sys
value = json.load(sys.stdin).get(sys.argv[1], "<missing field>")
print(value if isinstance(value, str) else json.dumps(value))' "$2"
}

# Fails unless run RUN has STATUS and EXIT code and is complete (ended, chained).
expect_run() { # RUN STATUS EXIT
    local id=$1
    [[ $id != last ]] || id=$(last_run_id)
    audit_cmd show "$id" --json >"$T/run.json"
    "$HOST_PY" - "$2" "$3" "$T/run.json" <<'EOF' || miss "audit row of run $id: see above"
import json, sys
want_status, want_exit, path = sys.argv[1], sys.argv[2], sys.argv[3]
row = json.load(open(path))
problems = []
if row["status"] != want_status:
    problems.append(f"status {row['status']!r}, expected {want_status!r}")
if str(row["exit_code"]) != want_exit:
    problems.append(f"exit_code {row['exit_code']!r}, expected {want_exit}")
for field in ("end_ms", "duration_ms", "chain_seq", "row_hash", "prev_hash"):
    if row.get(field) is None:
        problems.append(f"{field} is null: the row is not complete")
for problem in problems:
    print(f"audit row {row['run_id']}: {problem} (message: {row.get('message')!r})", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
}

# Waits until the newest run is recorded as running and its container exists; prints its id.
wait_for_running_container() { # TIMEOUT-SECONDS
    local deadline=$((SECONDS + ${1:-20})) id=""
    while ((SECONDS < deadline)); do
        if [[ -s $SANDSHIM_AUDIT_DB ]]; then
            id=$(audit_cmd list --status running --limit 1 --json |
                "$HOST_PY" -c 'import json, sys
rows = json.load(sys.stdin)
print(rows[0]["run_id"] if rows else "")')
            if [[ -n $id ]] && [[ $("$ENGINE_CLIENT" ps --filter "name=^sandshim-$id\$" --filter status=running \
                --format '{{.Names}}') == "sandshim-$id" ]]; then
                printf '%s\n' "$id"
                return 0
            fi
        fi
        sleep 0.1
    done
    fail "no running sandshim container appeared within ${1:-20}s"
}

container_exists() { # NAME
    [[ -n $("$ENGINE_CLIENT" ps --all --filter "name=^$1\$" --format '{{.Names}}') ]]
}

# Waits until COMMAND succeeds (polled every 0.1 s); past SECONDS the suite fails naming WHAT.
wait_until() { # SECONDS WHAT COMMAND...
    local limit=$1 what=$2
    local deadline=$((SECONDS + limit))
    shift 2
    until "$@"; do
        ((SECONDS < deadline)) || fail "$what: not within $limit s"
        sleep 0.1
    done
}

# True once the container is gone; removal after a warm run's deadline finishes in the background
# (the shim has already returned 124), so a loaded engine may need a moment.
container_gone_within() { # NAME SECONDS
    local deadline=$((SECONDS + $2))
    while container_exists "$1"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# The run's container is gone soon after the shim returned: a cold run returns at the
# container's exit and the engine removes it (AutoRemove, the guardian behind it); a warm run's
# is removed right after the run. Either is off the caller's path, so allow a loaded engine 10 s.
assert_run_container_gone() { # NAME WHAT
    container_gone_within "$1" 10 || fail "container $1 is still there 10 s after $2"
}

# ---------------------------------------------------------------------------------------------
# A TCP listener on the host's loopback, for the network checks: accepts and closes connections
# until the suite ends. Sets LISTEN_PORT.
start_loopback_listener() {
    "$HOST_PY" - "$T/listener.port" <<'EOF' &
import socket, sys
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(16)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.settimeout(300)
while True:
    try:
        conn, _ = server.accept()
    except socket.timeout:
        break
    conn.close()
EOF
    BG_PIDS+=($!)
    local _
    for _ in $(seq 50); do
        [[ -s $T/listener.port ]] && break
        sleep 0.1
    done
    LISTEN_PORT=$(cat "$T/listener.port")
}

# agent_payload AGENT EVENT COMMAND TOOL_USE_ID CWD: an agent's hook payload, in its documented shape.
agent_payload() {
    "$HOST_PY" - "$@" <<'EOF'
import json, sys
agent, event, command, tool_use_id, cwd = sys.argv[1:6]
body = {"session_id": "e2e-" + agent, "transcript_path": None, "cwd": cwd,
        "permission_mode": "default", "hook_event_name": event, "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": tool_use_id}
if agent == "claude":
    body["transcript_path"] = "/tmp/transcript.jsonl"
    body["tool_input"]["description"] = "e2e"
else:
    body.update({"turn_id": "turn-1", "model": "gpt-5-codex"})
if event == "PostToolUse":
    body["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
if event == "SessionStart":
    for key in ("tool_name", "tool_input", "tool_use_id"):
        del body[key]
    body["source"] = "startup"
print(json.dumps(body))
EOF
}
