# shellcheck shell=bash
# Makes sure a Docker engine answers. When none does, starts dockerd detached and stops only that one.
#
#   . install/lib/engine.sh
#   on_exit engine_stop_if_started       # register first, so Ctrl-C during start-up also cleans up
#   engine_ensure_running || die "..."
#
# Reads: SANDSHIM_STATE_DIR (log dir), SANDSHIM_ENGINE_TIMEOUT (seconds to wait, default 60),
#        SANDSHIM_DOCKERD_ARGS (extra dockerd arguments, split on spaces), DOCKER_HOST.

[[ -n ${_sandshim_engine_loaded:-} ]] && return 0
_sandshim_engine_loaded=1

# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

readonly k_engine_pidfile=/var/run/docker.pid
readonly k_engine_socket=/var/run/docker.sock
readonly k_engine_containerd_pidfile=/var/run/docker/containerd/containerd.pid

_engine_dockerd_pid=""    # the dockerd this shell started; empty when it used one already running
_engine_spawn_pid=""      # our background child: dockerd itself, or setsid waiting for it
_engine_containerd_pid="" # the containerd that our dockerd spawned

# True when the engine answers within a few seconds (a wedged socket must not hang us).
engine_answers() {
    timeout "${1:-10}" docker info >/dev/null 2>&1
}

# Path of the log of the dockerd we start.
engine_log_path() {
    local dir
    dir=$(state_dir) || return 1
    printf '%s/dockerd.log\n' "$dir"
}

# In a root session, makes sure the docker group exists so dockerd gives it the socket.
engine_ensure_docker_group() {
    is_root || return 0
    getent group docker >/dev/null 2>&1 && return 0
    groupadd --system docker || { warn "could not create the docker group"; return 1; }
    say "created the docker group"
}

# Starts dockerd unless an engine answers; returns 1 with one explaining line when it cannot.
engine_ensure_running() {
    if ! command -v docker >/dev/null 2>&1; then
        say "no docker client on PATH; run install/deps.sh"
        return 1
    fi
    if engine_answers; then
        say "Docker engine already running; using it (it is left running)"
        return 0
    fi
    _engine_check_can_start || return 1
    if _engine_alive "$(_engine_pidfile_pid)" dockerd; then
        say "a dockerd is running but not answering yet; waiting for it"
        _engine_wait_ready "$(_engine_pidfile_pid)" "" && return 0
        say "the running dockerd (pid $(_engine_pidfile_pid)) does not answer; look at its log or stop it"
        return 1
    fi
    _engine_start
}

# Stops the dockerd (and its containerd) that this shell started; a no-op otherwise.
engine_stop_if_started() {
    [[ -n $_engine_dockerd_pid ]] || return 0
    local pid=$_engine_dockerd_pid cpid=$_engine_containerd_pid
    _engine_dockerd_pid=""
    if _engine_alive "$pid" dockerd; then
        say "stopping the dockerd this script started (pid $pid)"
        _engine_kill_and_wait "$pid" dockerd 60
    fi
    # dockerd stops its containerd on a clean exit; this catches the unclean case.
    [[ -z $cpid ]] || _engine_kill_and_wait "$cpid" containerd 15
    [[ -z $_engine_spawn_pid ]] || wait "$_engine_spawn_pid" 2>/dev/null || true
    _engine_spawn_pid=""
}

# True when this shell started the running engine.
engine_started_here() { [[ -n $_engine_dockerd_pid ]]; }

_engine_check_can_start() {
    if [[ -n ${DOCKER_HOST:-} ]]; then
        say "the engine at DOCKER_HOST='$DOCKER_HOST' does not answer; start it, or unset DOCKER_HOST"
        return 1
    fi
    if ! is_root; then
        local out
        out=$(timeout 10 docker info 2>&1) || true
        if [[ ${out,,} == *"permission denied"* ]]; then
            say "no permission on $k_engine_socket; run: sudo usermod -aG docker $(id -un), then log in again"
        elif [[ -S $k_engine_socket ]]; then
            say "the Docker engine at $k_engine_socket does not answer; restart it (sudo systemctl restart docker)"
        else
            say "no Docker engine is running and starting one needs root; run: sudo systemctl start docker (or sudo install/setup.sh)"
        fi
        return 1
    fi
    if ! command -v dockerd >/dev/null 2>&1; then
        say "dockerd is not installed; run install/deps.sh"
        return 1
    fi
}

_engine_start() {
    local log extra=()
    log=$(engine_log_path) || return 1
    engine_ensure_docker_group || true
    _engine_clear_stale_pidfiles
    read -r -a extra <<<"${SANDSHIM_DOCKERD_ARGS:-}"
    say "starting dockerd (log: $log)"
    _engine_spawn "$log" "${extra[@]}" &
    _engine_spawn_pid=$!
    _engine_dockerd_pid=$_engine_spawn_pid
    local started=$SECONDS
    if ! _engine_wait_ready "$_engine_spawn_pid" "$log"; then
        _engine_dockerd_pid=$(_engine_our_dockerd_pid)
        engine_stop_if_started
        return 1
    fi
    _engine_dockerd_pid=$(_engine_our_dockerd_pid)
    _engine_containerd_pid=$(cat "$k_engine_containerd_pidfile" 2>/dev/null || true)
    say "dockerd ready after $((SECONDS - started))s (pid $_engine_dockerd_pid)"
}

# Runs in a background subshell: a new session, no terminal, no stdio or other fds of the caller,
# so the daemon never holds CI's pipes open.
_engine_spawn() {
    local log=$1 fd
    shift
    for fd in /proc/"$BASHPID"/fd/*; do
        fd=${fd##*/}
        ((fd > 2)) && exec {fd}>&-
    done
    # -w: when setsid has to fork, it stays as long as dockerd, so $! still tells whether it runs.
    exec setsid -w dockerd "$@" >"$log" 2>&1 </dev/null
}

# Waits until the engine answers, the daemon dies, or SANDSHIM_ENGINE_TIMEOUT runs out.
_engine_wait_ready() {
    local pid=$1 log=$2 limit=${SANDSHIM_ENGINE_TIMEOUT:-60} start=$SECONDS
    until engine_answers 5; do
        if ! _engine_alive "$pid"; then
            say "dockerd exited during start-up"
            _engine_log_tail "$log"
            return 1
        fi
        if ((SECONDS - start >= limit)); then
            say "dockerd did not answer within ${limit}s (raise SANDSHIM_ENGINE_TIMEOUT if the machine is slow)"
            _engine_log_tail "$log"
            return 1
        fi
        sleep 1
    done
}

# A dockerd killed with the session leaves pidfiles; if their pid was reused, dockerd would refuse to
# start ("pid file found") or wait for a containerd that is not there.
_engine_clear_stale_pidfiles() {
    if [[ -f $k_engine_pidfile ]] && ! _engine_alive "$(_engine_pidfile_pid)" dockerd; then
        rm -f -- "$k_engine_pidfile"
    fi
    if [[ -f $k_engine_containerd_pidfile ]] &&
        ! _engine_alive "$(cat "$k_engine_containerd_pidfile" 2>/dev/null)" containerd; then
        rm -f -- "$k_engine_containerd_pidfile"
    fi
}

_engine_log_tail() {
    [[ -n $1 && -f $1 ]] || return 0
    say "last lines of $1:"
    tail -n 20 -- "$1" | sed 's/^/    /' >&2
}

# Under job control setsid must fork, so $! is setsid waiting for dockerd: then ask dockerd's pidfile.
_engine_our_dockerd_pid() {
    if _engine_alive "$_engine_spawn_pid" dockerd; then
        printf '%s\n' "$_engine_spawn_pid"
    else
        _engine_pidfile_pid
    fi
}

_engine_pidfile_pid() { cat "$k_engine_pidfile" 2>/dev/null || true; }

# True when pid runs (the named program, if given) and is not a zombie; a reaped pid may be reused.
_engine_alive() {
    local pid=$1 name=${2:-} stat
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -z $name || $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || return 1
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ ${stat##*) } != Z* ]]
}

_engine_kill_and_wait() {
    local pid=$1 name=$2 limit=$3 start=$SECONDS
    _engine_alive "$pid" "$name" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    while _engine_alive "$pid" "$name"; do
        if ((SECONDS - start >= limit)); then
            warn "$name (pid $pid) still running ${limit}s after SIGTERM; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            return 0
        fi
        sleep 0.2
    done
}

# ---------------------------------------------------------------------------------------------
# podman, the second engine: daemonless, so nothing to start. Rootful podman on a cgroup v1 host
# without systemd as PID 1 picks the cgroupfs manager and runc by itself; what it needs from us are
# the packages (install/deps.sh --with-podman: podman, tini for docker's init and exit codes,
# fuse-overlayfs and slirp4netns for rootless use) and the images (install/images.sh copies them).

# True when podman answers `podman info` within a few seconds.
podman_answers() {
    timeout "${1:-30}" podman info >/dev/null 2>&1
}

# Checks that podman can run sandshim's containers here; one explaining line and 1 when it cannot.
podman_ensure_ready() {
    if ! command -v podman >/dev/null 2>&1; then
        say "no podman client on PATH; run install/deps.sh --with-podman"
        return 1
    fi
    if ! podman_answers 30; then
        say "podman does not answer (podman info): $(timeout 30 podman info 2>&1 | tail -n 1)"
        return 1
    fi
    local facts
    facts=$(podman info --format '{{.Host.CgroupsVersion}} {{.Host.CgroupManager}} {{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}' 2>/dev/null || true)
    say "podman ready (cgroups, manager, runtime, storage: $facts)"
    if [[ $facts == v1* ]] && ! is_root; then
        warn "rootless podman on cgroup v1 cannot enforce memory, CPU or pids limits"
    fi
    command -v tini-static >/dev/null 2>&1 ||
        warn "no tini-static: podman's catatonit is the init, and a command that cannot start exits 1 instead of 126/127"
}
