#!/usr/bin/env bash
# sandshim-test-engines: docker podman
# sandshim-test-alone: yes  # loads the whole machine or times it: no other test runs beside it in CI
# On podman a probe whose `gap: podman …` header states a different outcome is held to that one
# instead (a documented gap, listed in the table and in docs/engines.md, podman): podman 4.3
# on cgroup v1 reports no OOM kill (res_memory_bomb.*: `killed`, not `oom`). Under runsc
# (SANDSHIM_TEST_RUNTIME) a probe's `gap: runsc …` header does the same.
# Hostile code inside the sandbox. Every probe of tests/hostile/ runs through the installed shims
# exactly as an agent runs code (`python p.py`, `node p.js`, `sh p.sh` with the shim directory
# first on PATH) and must end as its header says: the exit code, one complete audit row with the
# right status, no container, process or file left behind, nothing at the host's loopback
# listeners. Each probe is paired with a control that runs the same file where the action is
# allowed and shows it succeed, so no probe can hold by accident:
#   host [signal=SIG@S] [deadline=S]   the same file on the host, with the host's interpreter
#   policy KEY=VALUE...                 the shims again, with a config file that loosens KEY
#   docker -FLAG +FLAG=VALUE...         the exact engine command the shim would run
#                                       (SANDSHIM_DRY_RUN=1), minus every --FLAG, plus --FLAG=VALUE
#   none (why)                          a documented bypass (hygiene, not a boundary)
# and `exit=N` (the control's exit code), `leaves=daemon` (a daemon outlives it, which is then
# killed). Probe header lines (`# key: value`, `// key: value` in JavaScript):
#   hostile: CATEGORY | what      expect: exit=N status=S     policy: KEY=VALUE...
#   signal: SIG SECONDS (sent to the shim)    check: listener | flood stdout|stderr BYTES
#   requires: root and/or host paths the control needs (else the probe is skipped, and said so)
#   gap: ENGINE exit=N status=S [leaves=FILE] | why   on ENGINE, the outcome the probe run is held
#                                       to instead; FILE: what the engine leaves in the shim's cwd;
#                                       exit=N/M: either (a race of the engine's, stated in why)
# Probe exit codes: 42 the action worked, 73 it was refused (and the refusal seen), else broken.
# Prints a table (probe, expected, got, held/FAILED) and "N probes tried, N held".
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly PROBES_SRC=$SOURCE_DIR/tests/hostile
readonly SYSTEM_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
readonly SHIMS=$T/shims
readonly PROBES=$WS/probes
readonly NONCE=$$-$RANDOM
# Every process this suite starts carries it (see processes_matching); nothing else on the host does.
export HOSTILE_SUITE_MARK=hostile-$NONCE
LEFTOVER_WAIT_TENTHS=150 # a loaded engine took over 5 s to remove a container whose PID 1 ignores SIGTERM
readonly DAEMON_SECONDS=1000.$$ # a sleep no other process on the machine runs
readonly SHIM_RSS_LIMIT_KIB=$((48 * 1024))
readonly AUDIT_TAIL_BYTES=4096 # audit.tail_bytes, default
readonly BASE_TIMEOUT=120s      # see config_file
readonly RUNSC_FLOOD_TIMEOUT=900s # see config_file
RESULTS=$T/results
: >"$RESULTS"

# Files several checks create; their failures name the reason in $T/reason for the table.
fail() {
    printf '%s\n' "$*" >"$T/reason"
    die "$@"
}

# ---------------------------------------------------------------------------------------------
# Fixtures: shims, secrets, the workspace, listeners, a sentinel host process.

expect_exit 0 sandshim install --dir "$SHIMS"

# Host tools the checks and controls need (Debian packages in parentheses).
[[ -x /usr/bin/time ]] || die "no /usr/bin/time to measure the shim's memory (package time)"
PATH=$SYSTEM_PATH command -v node >/dev/null || die "no node on the host for the Node probes' host controls (package nodejs)"
if [[ $(id -u) == 0 ]]; then
    PATH=$SYSTEM_PATH command -v setcap >/dev/null || die "no setcap for the file-capability probe (package libcap2-bin)"
fi

# Canaries: a token in the environment, an SSH key, AWS credentials, a neighbouring project.
export GITHUB_TOKEN=canary-github-$NONCE AWS_SECRET_ACCESS_KEY=canary-aws-$NONCE
export OPENAI_API_KEY=canary-openai-$NONCE DEPLOY_PASSWORD=canary-password-$NONCE
export PYTHONDONTWRITEBYTECODE=1 # host controls must not leave __pycache__ in the workspace
mkdir -p "$HOME/.ssh" "$HOME/.aws" "$T/neighbour"
echo "-----BEGIN OPENSSH PRIVATE KEY----- canary-ssh-$NONCE" >"$HOME/.ssh/id_x"
printf '[default]\naws_secret_access_key = canary-aws-%s\n' "$NONCE" >"$HOME/.aws/credentials"
echo "STRIPE_KEY=canary-neighbour-$NONCE" >"$T/neighbour/.env"
chmod 600 "$HOME/.ssh/id_x" "$HOME/.aws/credentials"

# The workspace: writable by the sandbox user, so only the read-only mount can stop a write.
mkdir -p "$PROBES" "$WS/bin"
cp "$PROBES_SRC"/*.py "$PROBES_SRC"/*.js "$PROBES_SRC"/*.sh "$PROBES"
echo "a tracked file" >"$WS/victim.txt"
chmod 777 "$WS" "$WS/.git/hooks"
chmod 666 "$WS/victim.txt"
chmod -R a+rX "$PROBES"

# The engine client the shims use (the first word of a dry run), for extraction and controls.
SHIM_CLIENT=$(cd "$PROBES" && PATH=$SHIMS:$SYSTEM_PATH SANDSHIM_DRY_RUN=1 sh -c : | cut -d' ' -f1)
readonly SHIM_CLIENT
[[ -x $SHIM_CLIENT ]] || die "no engine client in the dry run: '$SHIM_CLIENT'"
[[ $(basename "$SHIM_CLIENT") == "$ENGINE" ]] || die "the shims use $SHIM_CLIENT, not the $ENGINE under test"

# A setuid-root id and a cat with a file capability, both the image's own binaries.
IS_ROOT=false
if [[ $(id -u) == 0 ]]; then
    IS_ROOT=true
    extract=sandshim-itest-hostile-extract-$$
    EXTRA_CONTAINERS+=("$extract")
    for pair in id:suid-id cat:cap-cat; do
        "$SHIM_CLIENT" run --rm --pull=never --log-driver=none --network=none --name "$extract" \
            "${PLAIN_RUN_LIMITS[@]}" \
            sandshim/sh:bookworm cat "/usr/bin/${pair%%:*}" >"$WS/bin/${pair#*:}"
    done
    chown 0:0 "$WS/bin/suid-id" "$WS/bin/cap-cat"
    chmod 4755 "$WS/bin/suid-id"
    chmod 755 "$WS/bin/cap-cat"
    setcap cap_dac_override+ep "$WS/bin/cap-cat" || die "setcap failed (package libcap2-bin)"
fi
readonly IS_ROOT

"$HOST_PY" "$PROBES_SRC/harness/listener.py" "$T" "$NONCE" &
BG_PIDS+=($!)
for _ in $(seq 100); do
    [[ -s $T/listener.params ]] && break
    sleep 0.1
done
[[ -s $T/listener.params ]] || die "the loopback listeners did not start"
touch "$T/listener.log"

bash -c 'exec -a "sandshim-sentinel-$1" sleep 900' sentinel "$NONCE" &
BG_PIDS+=($!)
SENTINEL_PID=$!

{
    cat "$T/listener.params"
    echo "SENTINEL_PID=$SENTINEL_PID"
    echo "SENTINEL_PATTERN=sandshim[-]sentinel-$NONCE"
    echo "HOST_HOME=$HOME"
    echo "HOST_NEIGHBOUR=$T/neighbour"
    echo "AUDIT_DB=$SANDSHIM_AUDIT_DB"
    echo "DAEMON_SECONDS=$DAEMON_SECONDS"
} >"$PROBES/params"
chmod 644 "$PROBES/params"

# ---------------------------------------------------------------------------------------------
# Reading a probe.

# header FILE KEY: the value of the probe's `# KEY: value` (or `// KEY: value`) line.
header() {
    sed -n -E "1,12s%^(#|//) $2: (.*)$%\\2%p" "$1" | head -n 1
}

# word KEY WORDS...: the value of KEY=value among WORDS.
word() {
    local key=$1 w
    shift
    for w in "$@"; do
        [[ $w == "$key="* ]] && printf '%s\n' "${w#*=}" && return 0
    done
    return 0
}

# engine_gap FILE: the `exit=N status=S` words of the probe's `gap:` header that names the
# engine under test, or `runsc` under SANDSHIM_TEST_RUNTIME=runsc (that one first; empty when
# none): a known difference of that engine or runtime, stated, not hidden. With `owner`: the
# name the gap header gives (the engine or the runtime).
engine_gap() { # FILE [owner]
    local gap want
    for want in ${SANDSHIM_TEST_RUNTIME:-} "$ENGINE"; do
        gap=$(sed -n -E "1,12s%^(#|//) gap: $want (.*)$%\\2%p" "$1" | head -n 1)
        if [[ -n $gap && ${2:-} == owner ]]; then
            echo "$want"
            return 0
        elif [[ -n $gap ]]; then
            printf '%s\n' "${gap%% |*}"
            return 0
        fi
    done
}

# A file the engine itself (not the probe) leaves in the directory the shim ran in, as the gap
# states (`leaves=NAME`): removed, and said, so the file check still holds for everything else.
remove_gap_leftover() { # NAME
    [[ -n $1 && -e $PROBES/$1 ]] || return 0
    rm -f -- "${PROBES:?}/$1"
    echo "$(cat "$T/got"), $ENGINE left probes/$1 (the gap)" >"$T/got"
}

interpreter_of() { # FILE -> the command an agent would type
    case $1 in
    *.py) echo python ;;
    *.js) echo node ;;
    *.sh) echo sh ;;
    esac
}

host_interpreter_of() {
    case $1 in
    *.py) echo "$HOST_PY" ;;
    *.js) PATH=$SYSTEM_PATH command -v node ;;
    *.sh) echo /bin/sh ;;
    esac
}

# ---------------------------------------------------------------------------------------------
# Running a probe: through the shims, on the host, or as a loosened engine command.

# The deadline of a probe run that is not about the deadline. Under runsc a flood (RUN_FLOOD)
# gets RUNSC_FLOOD_TIMEOUT: gVisor's stdout is slow, not lossy (docs/engines.md, gVisor).
base_timeout() {
    if [[ ${SANDSHIM_TEST_RUNTIME:-} == runsc && -n ${RUN_FLOOD:-} ]]; then
        echo "$RUNSC_FLOOD_TIMEOUT"
    else
        echo "$BASE_TIMEOUT"
    fi
}

# A config file from KEY=VALUE words (sandbox.timeout=3s -> [sandbox] timeout = 3s); prints its path.
# Unless the words set a deadline, it is BASE_TIMEOUT: no probe but the deadline ones is about
# the deadline, and a loaded machine (load average 100 on 2 cores was seen) can take more than the
# default 30 s just to start a container.
config_file() {
    local file=$T/run.conf setting
    printf '[engine]\nname = %s\n' "$ENGINE" >"$file" # the engine under test (docker or podman)
    # SANDSHIM_TEST_RUNTIME=runsc: the whole corpus on gVisor (see suite_gvisor.sh)
    [[ -z ${SANDSHIM_TEST_RUNTIME:-} ]] || printf '[sandbox]\nruntime = %s\n' "$SANDSHIM_TEST_RUNTIME" >>"$file"
    [[ " $* " == *" sandbox.timeout="* ]] || printf '[sandbox]\ntimeout = %s\n' "$(base_timeout)" >>"$file"
    for setting in "$@"; do
        printf '[%s]\n%s = %s\n' "${setting%%.*}" "$(cut -d= -f1 <<<"${setting#*.}")" "${setting#*=}" >>"$file"
    done
    echo "$file"
}

# run_cmd CMD...: runs CMD in the probes directory; RUN_SIGNAL ("TERM 1.5") is sent to it after
# that many seconds; RUN_FLOOD (stdout|stderr) counts that stream into $T/count and measures
# CMD's max RSS into $T/rss. Sets RC and ELAPSED_MS; output in $OUT and $ERR.
run_cmd() {
    local started=$EPOCHREALTIME pid statuses
    RC=0
    : >"$OUT"
    : >"$ERR"
    cd "$PROBES"
    if [[ -n ${RUN_FLOOD:-} ]]; then
        set +e
        if [[ $RUN_FLOOD == stdout ]]; then
            /usr/bin/time -f %M -o "$T/rss" "$@" 2>"$ERR" </dev/null | wc -c >"$T/count"
        else
            /usr/bin/time -f %M -o "$T/rss" "$@" 2>&1 >"$OUT" </dev/null | wc -c >"$T/count"
        fi
        statuses=("${PIPESTATUS[@]}")
        set -e
        RC=${statuses[0]}
    else
        "$@" >"$OUT" 2>"$ERR" </dev/null &
        pid=$!
        if [[ -n ${RUN_SIGNAL:-} ]]; then
            sleep "${RUN_SIGNAL#* }"
            kill -s "${RUN_SIGNAL%% *}" "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || RC=$? # no "Killed" notice: a host control may end that way
    fi
    ELAPSED_MS=$(ms_since "$started")
    cd "$WS"
}

# The probe through the shim, as an agent runs it; POLICY words change the policy for this run.
run_through_shim() { # FILE POLICY-WORDS...
    local file=$1
    shift
    run_cmd env PATH="$SHIMS:$SYSTEM_PATH" SANDSHIM_CONFIG="$(config_file "$@")" \
        "$(interpreter_of "$file")" "$file"
}

run_on_host() { # FILE DEADLINE-SECONDS
    run_cmd timeout -s KILL "$2" env PATH="$SYSTEM_PATH" "$(host_interpreter_of "$1")" "$1"
}

# The engine command the shim would run for FILE, with EDITS applied, run directly (no deadline
# guardian: `timeout` stands in, and the container is removed after).
run_loosened_engine_command() { # FILE EDITS...
    local file=$1 name
    shift
    (cd "$PROBES" && PATH=$SHIMS:$SYSTEM_PATH SANDSHIM_DRY_RUN=1 "$(interpreter_of "$file")" "$file") >"$T/dry"
    "$HOST_PY" - "$T/dry" "$@" >"$T/loosened" <<'EOF'
import os, shlex, sys
argv = shlex.split(open(sys.argv[1]).read())
image = next(i for i, arg in enumerate(argv) if i > 1 and not arg.startswith("-"))
options, rest = argv[:image], argv[image:]
for edit in sys.argv[2:]:
    if edit.startswith("s/"):  # s/OLD/NEW/: OLD becomes NEW in every option
        old, new = edit.split("/")[1:3]
        edited = [o.replace(old, new) for o in options]
        if edited == options:
            sys.exit(f"the dry run has no {old}: {' '.join(options)}")
        options = edited
        continue
    flag = "--" + edit[1:]
    if edit[0] == "-":
        kept = [o for o in options if o != flag and not o.startswith(flag + "=")]
        if len(kept) == len(options):
            sys.exit(f"the dry run has no {flag}: {' '.join(options)}")
        options = kept
    else:
        options.append(flag)
# Under runsc an engine-command control runs on runc: it shows the action works once the flags
# allow it, which gVisor cannot show for some (no network here, no adjtimex, no keyrings).
# runsc's nproc (the pids cap, counted inside gVisor) goes too: on runc it counts every process
# of the sandbox user on the host, and another sandbox's fork bomb made the control's init fail.
if os.environ.get("SANDSHIM_TEST_RUNTIME") == "runsc":
    options = [o for o in options if not o.startswith(("--runtime", "--ulimit=nproc="))]
sys.stdout.write("\0".join(options + rest) + "\0")
EOF
    mapfile -d '' -t argv <"$T/loosened"
    name=$(printf '%s\n' "${argv[@]}" | sed -n 's/^--name=//p')
    echo "$name" >>"$T/extra-containers"
    say "control: ${argv[*]}"
    run_cmd timeout -k 5 "${BASE_TIMEOUT%s}" "${argv[@]}"
    expect_container_gone "$name"
}

# ---------------------------------------------------------------------------------------------
# What must hold after a run.

# Host processes this suite's runs could have left whose command line contains one of PATTERNS
# (fixed strings), this one excepted. Ours: its environment carries HOSTILE_SUITE_MARK (everything
# the suite starts inherits it: the shims with their guardians and API clients, the host controls
# and their daemons), or its command line names one of the run's CONTAINERS (the engine's client,
# which the shim starts with an environment of its own). Another suite's probes, with the same
# file names and running at the same time (they tripped this check under load), are neither.
processes_matching() { # [--container NAME]... PATTERNS...
    local containers=()
    while [[ ${1:-} == --container ]]; do
        containers+=("$2")
        shift 2
    done
    "$HOST_PY" - "${#containers[@]}" "${containers[@]}" "$@" <<'EOF'
import os, sys
me, parent = os.getpid(), os.getppid()
count = int(sys.argv[1])
containers, patterns = sys.argv[2:2 + count], sys.argv[2 + count:]
mark = ("HOSTILE_SUITE_MARK=" + os.environ["HOSTILE_SUITE_MARK"]).encode()
def read(pid, name):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return b""  # gone, or another user's: not a process this suite started
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) in (me, parent):
        continue
    cmdline = read(pid, "cmdline").replace(b"\0", b" ").decode(errors="replace")
    if not any(pattern in cmdline for pattern in patterns):
        continue
    if mark in read(pid, "environ").split(b"\0") or any(name in cmdline for name in containers):
        print(pid, cmdline.strip())
EOF
}

# Waits (LEFTOVER_WAIT_TENTHS tenths of a second at most: a released guardian exits on its own)
# until no process matches.
expect_no_process_left() { # [--container NAME]... PATTERNS...
    local left
    for _ in $(seq "$LEFTOVER_WAIT_TENTHS"); do
        left=$(processes_matching "$@")
        [[ -n $left ]] || return 0
        sleep 0.1
    done
    fail "processes left behind: $left"
}

# Every file of the workspace, the home directory and the neighbour, with size, mode and mtime
# (directories without mtime: a control that creates and removes a file changes it). The shim's
# own state on the host (the engine-facts cache, warm pools) is written by sandshim, not by a probe.
snapshot() {
    find "$WS" "$HOME" "$T/neighbour" -path "$WS/.git/objects" -prune -o \
        -path "$XDG_STATE_HOME/sandshim" -prune -o \
        \( -type d -printf '%p d %m\n' \) -o -printf '%p %y %s %m %T@\n' | sort
}

expect_unchanged_files() { # BEFORE-FILE
    snapshot >"$T/after"
    diff "$1" "$T/after" >"$T/files.diff" || fail "files changed: $(head -c 1000 "$T/files.diff")"
}

listener_hits() { wc -l <"$T/listener.log"; }

# One audit query after a run through the shim: exactly one new row, complete (ended, chained),
# with STATUS and EXIT. Prints the row's run id.
expect_one_new_row() { # ROWS-BEFORE STATUS EXIT
    audit_cmd sql "SELECT (SELECT count(*) FROM runs) AS n, run_id, status, exit_code, end_ms,
        chain_seq, row_hash, prev_hash, message FROM runs ORDER BY start_ms DESC LIMIT 1" --jsonl >"$T/row.json"
    "$HOST_PY" - "$@" "$T/row.json" <<'PY' || fail "$(cat "$T/row.problems")"
import json, sys
rows_before, status, exit_code, path = sys.argv[1:]
row = json.loads(open(path).read() or "{}")
problems = []
if row.get("n") != int(rows_before) + 1:
    problems.append(f"{row.get('n')} audit rows, expected {int(rows_before) + 1}")
if row.get("status") != status or str(row.get("exit_code")) != exit_code:
    problems.append(f"audit row: status {row.get('status')!r} exit {row.get('exit_code')}, expected {status!r} {exit_code} (message: {row.get('message')!r})")
problems += [f"audit row: {field} is null" for field in ("end_ms", "chain_seq", "row_hash", "prev_hash") if row.get(field) is None]
open(path.replace("row.json", "row.problems"), "w").write("; ".join(problems))
print(row.get("run_id", ""))
sys.exit(1 if problems else 0)
PY
}

# The engine removes a --rm container as it exits; give it 5 s.
expect_container_gone() { # NAME
    for _ in $(seq 50); do
        container_exists "$1" || return 0
        sleep 0.1
    done
    fail "container $1 is still there"
}

# The flood arrived whole, the shim stayed small, the audit kept only its tail.
expect_flood() { # STREAM BYTES SHIM(true|false)
    local stream=$1 bytes=$2 rss_kib tail_bytes
    expect_equal "$bytes" "$(tr -d ' ' <"$T/count")" "bytes counted at the sink of $stream"
    [[ $3 == true ]] || return 0
    rss_kib=$(tail -n 1 "$T/rss")
    say "shim max RSS relaying $((bytes >> 20)) MiB of $stream in $ELAPSED_MS ms: $((rss_kib / 1024)) MiB"
    echo "$(cat "$T/got"), shim max RSS $((rss_kib / 1024)) MiB for $((bytes >> 20)) MiB in $ELAPSED_MS ms" >"$T/got"
    ((rss_kib < SHIM_RSS_LIMIT_KIB)) || fail "the shim grew to $rss_kib KiB relaying $bytes bytes"
    expect_equal "$bytes" "$(audit_field last "${stream}_bytes")" "${stream}_bytes in the audit"
    tail_bytes=$(audit_field last "${stream}_tail" | head -c -1 | wc -c)
    ((tail_bytes > 0 && tail_bytes <= AUDIT_TAIL_BYTES)) ||
        fail "the audit kept $tail_bytes bytes of $stream, expected 1..$AUDIT_TAIL_BYTES"
}

# ---------------------------------------------------------------------------------------------
# One probe: the probe run, its checks, the control run, its checks. Runs in a subshell; writes
# its verdict to $T/verdict and the observed outcome to $T/got.

try_probe() { # FILE
    local file=$1 expect gap policy signal check control kind want_exit want_status
    local control_exit leaves deadline words rows hits flood_stream flood_bytes id
    read -ra expect <<<"$(header "$PROBES/$file" expect)"
    read -ra policy <<<"$(header "$PROBES/$file" policy)"
    signal=$(header "$PROBES/$file" signal)
    check=$(header "$PROBES/$file" check)
    control=$(header "$PROBES/$file" control)
    read -ra gap <<<"$(engine_gap "$PROBES/$file")"
    ((${#gap[@]} == 0)) || expect=("${gap[@]}")
    want_exit=$(word exit "${expect[@]}")
    want_status=$(word status "${expect[@]}")
    [[ -n $want_exit && -n $want_status && -n $control ]] || fail "incomplete header (expect: '${expect[*]}', control: '$control')"
    if [[ $check == flood* ]]; then
        read -r _ flood_stream flood_bytes <<<"$check"
    fi

    # The probe, as an agent runs it.
    snapshot >"$T/before"
    rows=$(run_count)
    hits=$(listener_hits)
    RUN_SIGNAL=$signal RUN_FLOOD=${flood_stream:-} run_through_shim "$file" "${policy[@]}"
    echo "exit $RC" >"$T/got"
    [[ /$want_exit/ == */"$RC"/* ]] ||
        fail "exit $RC, expected $want_exit; stdout: $(head -c 300 "$OUT"); stderr: $(head -c 300 "$ERR")"
    id=$(expect_one_new_row "$rows" "$want_status" "$RC")
    echo "exit $RC $want_status" >"$T/got"
    expect_container_gone "sandshim-$id"
    expect_no_process_left --container "sandshim-$id" "$file" "sleep $DAEMON_SECONDS"
    remove_gap_leftover "$(word leaves "${gap[@]}")"
    expect_unchanged_files "$T/before"
    [[ $check != listener ]] || expect_equal "$hits" "$(listener_hits)" "connections the host's listeners saw from the probe"
    [[ -z ${flood_stream:-} ]] || expect_flood "$flood_stream" "$flood_bytes" true

    # The control: the same file, where the action is allowed.
    read -ra words <<<"$control"
    CONTROL_CONTAINER=()
    kind=${words[0]}
    words=("${words[@]:1}")
    control_exit=$(word exit "${words[@]}")
    leaves=$(word leaves "${words[@]}")
    signal=$(word signal "${words[@]}")
    deadline=$(word deadline "${words[@]}")
    mapfile -t words < <(printf '%s\n' "${words[@]}" | grep -v -E '^(exit|leaves|signal|deadline)=' || true)
    snapshot >"$T/before"
    hits=$(listener_hits)
    case $kind in
    none)
        echo "$(cat "$T/got"); no control: ${control#none }" >"$T/got"
        echo held >"$T/verdict"
        return 0
        ;;
    host)
        RUN_SIGNAL=${signal/@/ } RUN_FLOOD=${flood_stream:-} run_on_host "$file" "${deadline:-60}"
        ;;
    policy)
        rows=$(run_count)
        RUN_SIGNAL="" RUN_FLOOD="" run_through_shim "$file" "${words[@]}"
        id=$(expect_one_new_row "$rows" "$( ((RC == 0)) && echo ok || echo error)" "$RC")
        expect_container_gone "sandshim-$id"
        CONTROL_CONTAINER=(--container "sandshim-$id")
        ;;
    docker)
        RUN_SIGNAL="" RUN_FLOOD="" run_loosened_engine_command "$file" "${words[@]}"
        ;;
    *) fail "unknown control kind '$kind'" ;;
    esac
    echo "$(cat "$T/got"); control ($kind) exit $RC" >"$T/got"
    [[ $RC == "$control_exit" ]] ||
        fail "control: exit $RC, expected $control_exit; stdout: $(head -c 300 "$OUT"); stderr: $(head -c 300 "$ERR")"
    [[ $check != listener ]] || (($(listener_hits) > hits)) || fail "control: the host's listeners saw nothing"
    [[ -z ${flood_stream:-} ]] || expect_flood "$flood_stream" "$flood_bytes" false
    if [[ $leaves == daemon ]]; then
        local daemons
        daemons=$(processes_matching "sleep $DAEMON_SECONDS" | cut -d' ' -f1)
        [[ -n $daemons ]] || fail "control: no daemon outlived the host run"
        # shellcheck disable=SC2086 # one pid per word
        kill -9 $daemons
        echo "$(cat "$T/got"), left a daemon (killed)" >"$T/got"
    fi
    expect_no_process_left "${CONTROL_CONTAINER[@]}" "$file" "sleep $DAEMON_SECONDS"
    snapshot >"$T/after"
    diff <(awk '{print $1, $2}' "$T/before") <(awk '{print $1, $2}' "$T/after") >"$T/files.diff" ||
        fail "control: files left behind or missing: $(head -c 1000 "$T/files.diff")"
    echo held >"$T/verdict"
}

# ---------------------------------------------------------------------------------------------
# The leftover-process check itself, both ways: a process that names a probe and carries this
# suite's mark, or a client naming this run's container, is found and fails the check; the same
# command line in a process of another suite's (no mark, another container) is not.

check "the leftover-process check: finds what this suite's runs left, not another suite's probes"
selftest_probe=ws_write.py
selftest_run=sandshim-selftest-$NONCE
# Starts `sleep` under the command line ARGV0, with or without the mark; sets DECOY (its pid).
start_decoy() { # MARKED(yes|no) ARGV0
    if [[ $1 == no ]]; then
        (unset HOSTILE_SUITE_MARK && exec -a "$2" sleep 300) </dev/null >/dev/null 2>&1 &
    else
        (exec -a "$2" sleep 300) </dev/null >/dev/null 2>&1 &
    fi
    DECOY=$!
    BG_PIDS+=("$DECOY")
    for _ in $(seq 50); do # until it has exec'd
        tr '\0' ' ' <"/proc/$DECOY/cmdline" | grep -qF "$2" && return 0
        sleep 0.1
    done
    fail "the decoy '$2' did not start"
}
start_decoy no "python $selftest_probe"
foreign=$DECOY
start_decoy no "docker run --name=sandshim-other-$NONCE python $selftest_probe"
foreign_client=$DECOY
start_decoy yes "python $selftest_probe"
leaked=$DECOY
start_decoy no "docker run --name=$selftest_run python $selftest_probe"
leaked_client=$DECOY
expect_equal "$leaked" "$(processes_matching "$selftest_probe" | cut -d' ' -f1)" "the marked process, alone"
expect_equal "$(printf '%s\n' "$leaked" "$leaked_client" | sort -n)" \
    "$(processes_matching --container "$selftest_run" "$selftest_probe" | cut -d' ' -f1 | sort -n)" \
    "the marked process and the client of this run's container"
if (LEFTOVER_WAIT_TENTHS=1 expect_no_process_left "$selftest_probe") 2>"$T/selftest.err"; then
    fail "a process this suite leaked passed the leftover check"
fi
expect_contains "processes left behind: $leaked python $selftest_probe" "$T/selftest.err"
kill "$leaked" "$leaked_client"
wait "$leaked" "$leaked_client" 2>/dev/null || true
(LEFTOVER_WAIT_TENTHS=10 expect_no_process_left --container "$selftest_run" "$selftest_probe") ||
    fail "another suite's processes (pids $foreign, $foreign_client) failed the leftover check"
kill "$foreign" "$foreign_client"
wait "$foreign" "$foreign_client" 2>/dev/null || true
rm -f "$T/reason"

# ---------------------------------------------------------------------------------------------
# The corpus.

# What a probe's `requires:` words (root, or host paths its control needs) lack on this host.
missing_requirements() { # WORDS
    local need
    for need in $1; do
        if [[ $need == root ]]; then
            [[ $IS_ROOT == true ]] || printf ' root'
        elif [[ ! -e $need ]]; then
            printf ' %s' "$need"
        fi
    done
}

TRIED=0
HELD=0
BYPASSES=0
SKIPPED=0
# SANDSHIM_HOSTILE_PROBES (a glob, e.g. 'net_*') runs a subset while working on the corpus.
mapfile -t corpus < <(cd "$PROBES_SRC" && printf '%s\n' *.py *.js *.sh | grep -v '^_' | sort)
for file in "${corpus[@]}"; do
    path=$PROBES_SRC/$file
    # shellcheck disable=SC2053 # a glob on purpose
    [[ $file == ${SANDSHIM_HOSTILE_PROBES:-*} ]] || continue
    hostile=$(header "$path" hostile)
    category=${hostile%% |*}
    expected="$(header "$path" expect)"
    engine_gap_words=$(engine_gap "$path")
    [[ -z $engine_gap_words ]] || expected="$engine_gap_words (a documented gap on $(engine_gap "$path" owner))"
    missing=$(missing_requirements "$(header "$path" requires)")
    if [[ -n $missing ]]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$file" "$category" "$expected" "-" "SKIPPED (the host lacks$missing)" >>"$RESULTS"
        SKIPPED=$((SKIPPED + 1))
        continue
    fi
    check "$file: ${hostile#* | }"
    TRIED=$((TRIED + 1))
    rm -f "$T/verdict" "$T/got" "$T/reason"
    started=$EPOCHREALTIME
    set +e
    (
        set -e
        CHECK=$file
        try_probe "$file"
    )
    set -e
    if [[ -f $T/extra-containers ]]; then
        mapfile -t -O "${#EXTRA_CONTAINERS[@]}" EXTRA_CONTAINERS <"$T/extra-containers"
        rm "$T/extra-containers"
    fi
    verdict=FAILED
    if [[ $(cat "$T/verdict" 2>/dev/null) == held ]]; then
        verdict=held
        HELD=$((HELD + 1))
        [[ $(header "$path" control) != none* ]] || BYPASSES=$((BYPASSES + 1))
    else
        verdict="FAILED: $(cat "$T/reason" 2>/dev/null || echo "see above")"
    fi
    printf '%s\t%s\t%s\t%s (%s ms)\t%s\n' "$file" "$category" "$expected" \
        "$(cat "$T/got" 2>/dev/null || echo -)" "$(ms_since "$started")" "$verdict" >>"$RESULTS"
done

# shellcheck disable=SC2034 # read by lib.sh's failure messages
CHECK=""
{
    printf 'probe\tcategory\texpected\tgot\tverdict\n'
    cat "$RESULTS"
} | if command -v column >/dev/null; then column -t -s $'\t'; else cat; fi
say "$TRIED probes tried, $HELD held ($BYPASSES of them documented bypasses: hygiene, not a boundary)$( ((SKIPPED == 0)) || echo ", $SKIPPED skipped")"
[[ -n ${SANDSHIM_HOSTILE_PROBES:-} ]] || ((TRIED >= 40)) || fail "only $TRIED probes tried; the corpus has at least 40"
((HELD == TRIED)) || fail "$((TRIED - HELD)) probe(s) did not hold: see the table"
suite_done
