# shellcheck shell=bash
# podman's API service (`podman system service --time=0`) where no systemd socket activates it
# (CI, containers): started detached with its log in a file, stopped only when this shell
# started it. sandshim's cold runs on podman go over this socket while it answers.
#
#   . install/lib/podman_service.sh
#   on_exit podman_service_stop_if_started     # register first: Ctrl-C during start-up cleans up
#   podman_service_ensure LOG || die "..."      # the default socket (root: /run/podman/podman.sock)
#   podman_service_answers SOCKET              # true when a ping answers within 5 s
#
# Reads: XDG_RUNTIME_DIR (a rootless service's socket lives under it).

[[ -n ${_sandshim_podman_service_loaded:-} ]] && return 0
_sandshim_podman_service_loaded=1

# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

_podman_service_pid=""    # the service this shell started; empty when it used one already there
_podman_service_socket="" # its socket

# Where sandshim looks for the service of this user (engine/endpoint.cpp): root's under /run,
# a rootless user's under XDG_RUNTIME_DIR.
podman_service_default_socket() {
    if is_root; then
        printf '/run/podman/podman.sock\n'
    elif [[ -n ${XDG_RUNTIME_DIR:-} ]]; then
        printf '%s/podman/podman.sock\n' "$XDG_RUNTIME_DIR"
    else
        say "XDG_RUNTIME_DIR is not set: a rootless podman service has no socket"
        return 1
    fi
}

# True when the service at SOCKET answers its ping within 5 s (a socket file with nobody behind it
# does not). python3 speaks the one request: podman's remote client takes seconds to start.
podman_service_answers() { # SOCKET
    [[ -S $1 ]] && python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: d\r\n\r\n")
status = s.recv(64).split(b"\r\n")[0].split()
sys.exit(0 if len(status) > 1 and status[1] == b"200" else 1)
PY
}

# Starts the service on SOCKET (default: this user's) unless one answers there; its log goes to
# LOG. Waits until it answers; 1 with the log's tail when it does not.
podman_service_ensure() { # LOG [SOCKET]
    local log=$1 socket=${2:-} i
    [[ -n $socket ]] || socket=$(podman_service_default_socket) || return 1
    command -v podman >/dev/null 2>&1 || { say "no podman on PATH; run install/deps.sh"; return 1; }
    command -v python3 >/dev/null 2>&1 || { say "no python3 on PATH; run install/deps.sh"; return 1; }
    if podman_service_answers "$socket"; then
        say "podman's API service already answers at $socket; using it (it is left running)"
        return 0
    fi
    mkdir -p "$(dirname "$socket")"
    rm -f "$socket" # a stale socket of a service that died; nobody answers on it
    # In the log's directory: conmon, which the service spawns there, writes its `oom` file there.
    (cd "$(dirname "$log")" && exec setsid podman system service --time=0 "unix://$socket" >"$log" 2>&1 </dev/null) &
    _podman_service_pid=$!
    _podman_service_socket=$socket
    for ((i = 0; i < 100; i++)); do
        podman_service_answers "$socket" && { say "started podman's API service at $socket (log $log)"; return 0; }
        kill -0 "$_podman_service_pid" 2>/dev/null || break
        sleep 0.2
    done
    say "podman's API service did not answer at $socket: $(tail -n 5 "$log" 2>/dev/null)"
    podman_service_stop_if_started
    return 1
}

# Stops the service this shell started (by its pid, never by name) and removes its socket.
podman_service_stop_if_started() {
    [[ -n $_podman_service_pid ]] || return 0
    kill -TERM "$_podman_service_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
        kill -0 "$_podman_service_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$_podman_service_pid" 2>/dev/null || true
    wait "$_podman_service_pid" 2>/dev/null || true
    rm -f "$_podman_service_socket"
    _podman_service_pid=""
    _podman_service_socket=""
    return 0
}

# Whether this shell started the service now running.
podman_service_started_here() { [[ -n $_podman_service_pid ]]; }
