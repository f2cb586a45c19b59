# shellcheck shell=bash
# A private Docker engine for the fault suites: its own dockerd and containerd, data root, exec
# root and socket, so a suite may kill, pause and restart it without touching the shared engine
# that other tests use. Source it after lib.sh; needs root (dockerd) and sets:
#
#   PRIVATE_ENGINE_DIR   the directory holding everything (under the suite's $T)
#   PRIVATE_ENGINE_HOST  unix://…/docker.sock, for sandshim's `engine.endpoint`
#   PRIVATE_ENGINE_ADMIN unix://…/admin.sock, a second socket for the harness's own checks, so
#                        they still see the engine when a check moves docker.sock away
#
# The suite's exit trap stops it (private_engine_stop) and removes its mounts and files.

PRIVATE_ENGINE_DIR=""
PRIVATE_ENGINE_HOST=""
PRIVATE_ENGINE_ADMIN=""
PRIVATE_ENGINE_CLIENT=$DOCKER # the real client, even after a suite points $DOCKER elsewhere

# The engine's client, talking to the private daemon only.
private_docker() { "$PRIVATE_ENGINE_CLIENT" -H "$PRIVATE_ENGINE_ADMIN" "$@"; }

private_dockerd_pid() { cat "$PRIVATE_ENGINE_DIR/dockerd.pid" 2>/dev/null; }
private_containerd_pid() { cat "$PRIVATE_ENGINE_DIR/exec/containerd/containerd.pid" 2>/dev/null; }

# dockerd reuses a containerd whose pid file names a live process; after a kill the old one may
# linger as a zombie (or its pid be reused), which would stall the restart: forget it then.
forget_dead_containerd() {
    local pidfile=$PRIVATE_ENGINE_DIR/exec/containerd/containerd.pid pid state
    pid=$(cat "$pidfile" 2>/dev/null) || return 0
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
    if [[ -z $state || $state == Z ]] ||
        ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$PRIVATE_ENGINE_DIR/"; then
        rm -f "$pidfile"
    fi
}

# Starts (or restarts, on the same data root) the private daemon and waits until it answers.
private_engine_up() {
    local dir=$PRIVATE_ENGINE_DIR _
    forget_dead_containerd
    # setsid: the daemon ignores the suite's process group and terminal signals.
    setsid dockerd --config-file "$dir/daemon.json" --data-root "$dir/data" --exec-root "$dir/exec" \
        --pidfile "$dir/dockerd.pid" -H "$PRIVATE_ENGINE_HOST" -H "$PRIVATE_ENGINE_ADMIN" --bridge none --iptables=false \
        --ip-masq=false --ip-forward=false >>"$dir/dockerd.log" 2>&1 </dev/null &
    disown # killing it is a fault the suite injects, not a failure for bash to report
    local until=$((SECONDS + 90)) started=$EPOCHREALTIME
    while ((SECONDS < until)); do
        if timeout 5 "$PRIVATE_ENGINE_CLIENT" -H "$PRIVATE_ENGINE_ADMIN" version >/dev/null 2>&1; then
            say "private dockerd answered after $(ms_since "$started") ms"
            return 0
        fi
        sleep 0.25
    done
    tail -20 "$dir/dockerd.log" >&2
    say "the private dockerd did not answer within 90 s (log: $dir/dockerd.log)"
    return 1
}

# Creates the private engine and loads IMAGE... into it from the shared engine.
private_engine_start() { # IMAGE...
    [[ $(id -u) == 0 ]] || skip_or_fail "a private dockerd needs root"
    command -v dockerd >/dev/null || skip_or_fail "no dockerd to start a private engine with"
    # A short path: a unix socket's path may not exceed 107 bytes.
    PRIVATE_ENGINE_DIR=$(mktemp -d /tmp/sandshim-pe.XXXXXX)
    PRIVATE_ENGINE_HOST=unix://$PRIVATE_ENGINE_DIR/docker.sock
    PRIVATE_ENGINE_ADMIN=unix://$PRIVATE_ENGINE_DIR/admin.sock
    chmod 755 "$PRIVATE_ENGINE_DIR"
    echo '{}' >"$PRIVATE_ENGINE_DIR/daemon.json" # never /etc/docker/daemon.json
    private_engine_up || fail "cannot start the private dockerd"
    local image
    for image in "$@"; do
        "$PRIVATE_ENGINE_CLIENT" save "$image" | private_docker load >/dev/null ||
            fail "cannot load $image into the private engine"
    done
}

private_engine_kill() { # SIGNAL: to dockerd (its containerd dies with it on KILL)
    local pid
    pid=$(private_dockerd_pid)
    [[ -n $pid ]] && kill "-$1" "$pid"
}

# SIGSTOP/SIGCONT the daemon and its containerd together.
private_engine_pause() { kill -STOP "$(private_dockerd_pid)" "$(private_containerd_pid)"; }
private_engine_resume() { kill -CONT "$(private_dockerd_pid)" "$(private_containerd_pid)"; }

# Waits until the daemon's process is gone.
private_engine_wait_dead() {
    local pid _
    pid=$(private_dockerd_pid)
    for _ in $(seq 100); do
        [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    fail "the private dockerd (pid $pid) did not die"
}

# Names of the containers that exist in the private engine.
private_containers() { private_docker ps --all --format '{{.Names}}'; }
# The private engine's containers once the removals in progress are done (a run returns at its
# container's exit, before the engine's AutoRemove): those still there after 10 s.
settled_private_containers() {
    local deadline=$((SECONDS + 10))
    while [[ -n $(private_docker ps --all --quiet --filter status=exited --filter status=removing \
        --filter status=dead) ]] && ((SECONDS < deadline)); do
        sleep 0.2
    done
    private_containers
}

# Stops the daemon, its containers, containerd and the shims, and removes its files. A daemon
# that was killed is started once more first: on start it reaps what its predecessor left.
private_engine_stop() {
    local dir=$PRIVATE_ENGINE_DIR pid left _
    [[ -n $dir && -d $dir ]] || return 0
    pid=$(private_dockerd_pid)
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        kill -CONT "$pid" "$(private_containerd_pid)" 2>/dev/null
    else
        private_engine_up 2>/dev/null || true
        pid=$(private_dockerd_pid)
    fi
    left=$(private_docker ps --all --quiet 2>/dev/null)
    # shellcheck disable=SC2086
    [[ -z $left ]] || private_docker rm --force $left >/dev/null 2>&1
    if [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null; then
        for _ in $(seq 150); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    grep -F " $dir/" /proc/mounts | awk '{print $2}' | sort -r | while read -r mount; do
        umount -l "$mount" 2>/dev/null
    done
    rm -rf "$dir"
}
