# shellcheck shell=bash
# What the broker suites share: a user NOT in the engine's group, a root-owned copy of the binary
# (and its workspace gate) with shims, and a private broker as the system user `sandshim` on a
# socket in the suite's directory. Source after lib.sh, then call broker_suite_setup.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/broker_lib.sh"
#   broker_suite_setup sandshim-NAME-nd [TAIL of the system file]
#   use_swap_window_engine            # before start_broker: a window between check and mount
#   start_broker [broker flags...]
#   as_nd DIR CMD...                  # as the test user, shims first on PATH, broker required
#   broker_client_command USER HOME   # the same prefix for another user, in CLIENT_COMMAND
# shellcheck source=../../install/lib/broker.sh
. "$SOURCE_DIR/install/lib/broker.sh"

# Stops the suite's broker first, then lib.sh's cleanup, which reads the exit status from $?.
stop_broker_then_cleanup() {
    local rc=$?
    broker_stop_if_started
    # Whatever still runs as the suite's own test user (a helper loop a failed check left behind)
    # would hold ctest's output pipe open until the test's timeout.
    [[ -z ${ND_USER:-} ]] || pkill -KILL -u "$ND_USER" 2>/dev/null || true # none left: the usual case
    chattr -a "$ANCHOR" 2>/dev/null || true # append-only: lib.sh's cleanup removes the directory
    (exit "$rc")
    cleanup
}

# The user, the binaries, the broker's state and system file; U is the test user's home.
broker_suite_setup() { # ND_USER [SYSTEM_FILE_TAIL]
    ND_USER=$1
    [[ $(id -u) == 0 ]] || skip_or_fail "needs root to create $ND_USER and start the broker"
    broker_ensure_user || skip_or_fail "cannot create the broker's user"
    ensure_plain_test_user "$ND_USER" || skip_or_fail "cannot create the test user $ND_USER"
    # shellcheck disable=SC2034 # read by the suites
    nd_uid=$(id -u "$ND_USER")
    # shellcheck disable=SC2034 # read by the suites
    nd_gid=$(id -g "$ND_USER")
    # Root-owned binary, gate and shims the test user and the broker's user can both run.
    mkdir -p "$T/bin" "$T/shims"
    cp "$SANDSHIM_BIN" "$T/bin/"
    broker_install_companions "$SANDSHIM_BIN" "$T/bin" || fail "cannot install the programs beside sandshim"
    chmod 755 "$T/bin" "$T/bin/sandshim" "$T/shims"
    for tool in python node sh; do ln -s "$T/bin/sandshim" "$T/shims/$tool"; done
    SOCK=$T/run/broker.sock
    BSTATE=$T/broker-state
    AUDIT_DBS+=("$BSTATE/audit.db")
    trap stop_broker_then_cleanup EXIT
    SYSCONF=$T/etc/config
    # shellcheck disable=SC2034 # read by the suites
    ANCHOR=$T/anchors/anchor.log
    broker_write_system_config "$SYSCONF" "$BSTATE" "$T/anchors" "${2:-}"
    U=$T/nd
    mkdir -p "$U/.config/sandshim"
    chown -R "$ND_USER:" "$U"
    chmod 755 "$U"
    # (The subshell execs the command, so a background one's $! is the client itself.)
    broker_client_command "$ND_USER" "$U"
    nd_command=("${CLIENT_COMMAND[@]}")
}

# The prefix that runs a command as USER (its groups from /etc/group) with HOME, the shims first
# on PATH and the suite's broker required. Sets CLIENT_COMMAND.
broker_client_command() { # USER HOME
    CLIENT_COMMAND=(setpriv --reuid="$(id -u "$1")" --regid="$(id -g "$1")" --init-groups
        env -i PATH="$T/shims:/usr/bin:/bin" HOME="$2" LANG=C.UTF-8 SANDSHIM_BROKER=required
        SANDSHIM_BROKER_SOCKET="$SOCK")
}

start_broker() { # [FLAGS...]
    broker_start "$T/bin/sandshim" "$SOCK" "$BSTATE" --system-config "$SYSCONF" "$@" ||
        fail "the broker did not start"
}

# The engine client the broker uses from here on (named in its system file): docker itself, except
# that while $T/swap-now exists a `run` first says "go" on $T/fifos/go to a swapper and waits for
# its "done" on $T/fifos/done (the window between the broker's check and the engine's mounts,
# made certain). The window is made in the client's `run`, so the suite keeps the client path
# (engine.api = off); the gate it proves is the container's first program on either path.
use_swap_window_engine() {
    mkdir -p "$T/engine" "$T/fifos"
    chmod 755 "$T/engine" "$T/fifos"
    mkfifo -m 666 "$T/fifos/go" "$T/fifos/done"
    cat >"$T/engine/docker" <<EOF
#!/bin/sh
if [ "\$1" = run ] && [ -e "$T/swap-now" ]; then
    echo go >"$T/fifos/go"
    read -r _ <"$T/fifos/done"
fi
exec "$(command -v docker)" "\$@"
EOF
    chmod 755 "$T/engine/docker"
    printf '[engine]\npath = %s\napi = off\n' "$T/engine/docker" >>"$SYSCONF"
}

# The engine's containers of the broker's warm pools for the test user's workspace
# ($POOL_WORKSPACE, else $U/ws).
broker_pool_containers() {
    "$DOCKER" ps -aq --filter label=org.sandshim.pool --filter "volume=${POOL_WORKSPACE:-$U/ws}"
}

# A broker whose warm pool runs through the launcher: its launcher directories on a tmpfs (the
# suite's own directory is not one), removed at exit with the pool's idle containers (never
# runs, so not in the audit that lib.sh's cleanup reads). Sets LAUNCH and POOL (its pools' state).
start_warm_broker() { # NAME
    LAUNCH=$(mktemp -d "/dev/shm/sandshim-$1.XXXXXX")
    chown sandshim: "$LAUNCH"
    trap remove_warm_pool_then_stop EXIT
    start_broker --launch-dir "$LAUNCH"
    POOL=$BSTATE/state/sandshim/pool
}
remove_warm_pool_then_stop() {
    local rc=$?
    broker_stop_if_started
    broker_pool_containers | xargs -r "$DOCKER" rm -f >/dev/null 2>&1
    rm -rf "$LAUNCH"
    (exit "$rc")
    stop_broker_then_cleanup
}

# Runs CMD as the test user in DIR with the shims first on PATH and the suite's broker.
as_nd() { # DIR CMD...
    local dir=$1
    shift
    (cd "$dir" && exec "${nd_command[@]}" "$@")
}

# Runs CMD with the uid and gids a run's own processes have through the broker: the test user's
# uid, the broker's group (the caller's processes never have it: the kernel then lets none of
# them trace a run or reach it through /proc/PID/root). What a program that did reach a run
# could do is tested with it.
as_run_identity() { # CMD...
    setpriv --reuid="$nd_uid" --regid="$(id -g "$k_broker_user")" --clear-groups "$@"
}

# `sandshim audit` as root on the broker's database.
broker_audit() { "$SANDSHIM_BIN" audit "$@" --db "$BSTATE/audit.db"; }
last_broker_run() {
    broker_audit list --limit 1 --json | "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])'
}
broker_row() { # RUN FIELD
    broker_audit show "$1" --json | "$HOST_PY" -c 'import json, sys
v = json.load(sys.stdin)[sys.argv[1]]
print(v if isinstance(v, str) else json.dumps(v))' "$2"
}

# A root-only directory holding a readable secret: the test user cannot pass through it, but a
# mount of LOCKED/inside would show it. Sets LOCKED.
make_locked_secret() {
    LOCKED=$T/locked
    mkdir -p "$LOCKED/inside"
    echo "the secret" >"$LOCKED/inside/secret"
    chmod 700 "$LOCKED"
    chmod 755 "$LOCKED/inside"
    chmod 644 "$LOCKED/inside/secret"
    ! as_nd "$U" cat "$LOCKED/inside/secret" 2>/dev/null || fail "control: the caller can read the secret"
}
