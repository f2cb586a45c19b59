# shellcheck shell=bash
# A private Docker engine for the fault suites: its own dockerd and containerd, data root, exec
# root and socket, so a suite may kill, pause and restart it without touching the shared engine
# that other tests use. Source it after lib.sh; needs root (dockerd) and sets:
#
#   PRIVATE_ENGINE_DIR   the directory holding everything (under the suite's $T)
#   PRIVATE_ENGINE_HOST  unix://…/docker.sock, for `engine.endpoint` and for DOCKER_HOST
#
# The suite's exit trap stops it (private_engine_stop) and removes its mounts and files.

PRIVATE_ENGINE_DIR=""
PRIVATE_ENGINE_HOST=""

# The engine's client, talking to the private daemon only.
private_docker() { DOCKER_HOST=$PRIVATE_ENGINE_HOST "$DOCKER" "$@"; }

private_dockerd_pid() { cat "$PRIVATE_ENGINE_DIR/dockerd.pid" 2>/dev/null; }
private_containerd_pid() { cat "$PRIVATE_ENGINE_DIR/exec/containerd/containerd.pid" 2>/dev/null; }

# Starts (or restarts, on the same data root) the private daemon and waits until it answers.
private_engine_up() {
    local dir=$PRIVATE_ENGINE_DIR _
    # setsid: the daemon ignores the suite's process group and terminal signals.
    setsid dockerd --config-file "$dir/daemon.json" --data-root "$dir/data" --exec-root "$dir/exec" \
        --pidfile "$dir/dockerd.pid" -H "$PRIVATE_ENGINE_HOST" --bridge none --iptables=false \
        --ip-masq=false --ip-forward=false >>"$dir/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 120); do
        timeout 5 "$DOCKER" -H "$PRIVATE_ENGINE_HOST" version >/dev/null 2>&1 && return 0
        sleep 0.25
    done
    tail -20 "$dir/dockerd.log" >&2
    fail "the private dockerd did not answer within 30 s (log: $dir/dockerd.log)"
}

# Creates the private engine and loads IMAGE... into it from the shared engine.
private_engine_start() { # IMAGE...
    [[ $(id -u) == 0 ]] || skip_or_fail "a private dockerd needs root"
    command -v dockerd >/dev/null || skip_or_fail "no dockerd to start a private engine with"
    # A short path: a unix socket's path may not exceed 107 bytes.
    PRIVATE_ENGINE_DIR=$(mktemp -d /tmp/sandshim-pe.XXXXXX)
    PRIVATE_ENGINE_HOST=unix://$PRIVATE_ENGINE_DIR/docker.sock
    chmod 755 "$PRIVATE_ENGINE_DIR"
    echo '{}' >"$PRIVATE_ENGINE_DIR/daemon.json" # never /etc/docker/daemon.json
    private_engine_up
    local image
    for image in "$@"; do
        "$DOCKER" save "$image" | private_docker load >/dev/null ||
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

# Stops the daemon, its containers, containerd and the shims, and removes its files.
private_engine_stop() {
    local dir=$PRIVATE_ENGINE_DIR pid left
    [[ -n $dir && -d $dir ]] || return 0
    pid=$(private_dockerd_pid)
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        kill -CONT "$pid" "$(private_containerd_pid)" 2>/dev/null
        left=$(private_docker ps --all --quiet 2>/dev/null)
        # shellcheck disable=SC2086
        [[ -z $left ]] || private_docker rm --force $left >/dev/null 2>&1
        kill -TERM "$pid"
        for _ in $(seq 150); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    # Shims of a daemon killed mid-run keep their containers: end them by their own socket.
    pkill_private_shims
    grep -F " $dir/" /proc/mounts | awk '{print $2}' | sort -r | while read -r mount; do
        umount -l "$mount" 2>/dev/null
    done
    rm -rf "$dir"
}

# containerd shims serving this engine (their command line names its socket), and their tasks.
pkill_private_shims() {
    local pid
    for pid in $(pgrep -f -- "-address $PRIVATE_ENGINE_DIR/exec/containerd/containerd.sock" || true); do
        pkill -KILL -P "$pid" 2>/dev/null
        kill -KILL "$pid" 2>/dev/null
    done
}
