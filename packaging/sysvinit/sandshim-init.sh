#!/bin/sh
### BEGIN INIT INFO
# Provides:          sandshim
# Required-Start:    $local_fs $remote_fs
# Required-Stop:     $local_fs $remote_fs
# Should-Start:      docker
# Should-Stop:       docker
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: sandshim broker (sandboxed runs for every user)
### END INIT INFO
# The broker where systemd is not PID 1: install/broker_setup.sh (and the .deb, through
# packaging/debian/stage.cmake) installs this file as
# /etc/init.d/sandshim with the paths below filled in and links it into the runlevels with
# `update-rc.d sandshim defaults` (sysvinit and OpenRC on Debian both start /etc/init.d scripts
# from those links at boot). The socket and the warm containers' launch directory go on a tmpfs:
# /run is one on every Debian boot; where it is not, start mounts a small tmpfs on the broker's
# directory, and where that is refused the launch directory goes to /dev/shm.
# Usage: /etc/init.d/sandshim start|stop|restart|status
set -eu

bin=@BIN@
run_dir=@RUN_DIR@
state_dir=@STATE_DIR@
system_config=@SYSTEM_CONFIG@
pidfile=@PIDFILE@
user=sandshim
tmpfs_size=8m # sockets and empty directories only

say() { echo "sandshim: $*" >&2; }

on_tmpfs() { [ "$(stat -f -c %T "$1" 2>/dev/null)" = tmpfs ]; }

# The pid of the broker this script started, when it still runs (not a reused pid).
running_pid() {
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [ -n "$pid" ] || return 1
    case $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) in
        *" broker --socket $run_dir/broker.sock "*) echo "$pid" ;;
        *) return 1 ;;
    esac
}

# The broker's socket directory, on a tmpfs; prints the launch directory for --launch-dir.
prepare_run_dir() {
    install -d -m 0755 "$run_dir"
    if ! on_tmpfs "$run_dir" &&
        ! mount -t tmpfs -o "size=$tmpfs_size,mode=0755,nosuid,nodev,noexec" tmpfs "$run_dir"; then
        fallback=/dev/shm/sandshim-launch
        if [ -L "$fallback" ] || { [ -e "$fallback" ] && [ "$(stat -c %U "$fallback")" != "$user" ]; }; then
            say "$fallback is not the broker's: warm runs will use docker exec"
        elif on_tmpfs /dev/shm; then
            install -d -o "$user" -g "$user" -m 0700 "$fallback"
            echo "$fallback"
            chown "$user:$user" "$run_dir"
            return 0
        fi
    fi
    chown "$user:$user" "$run_dir"
    install -d -o "$user" -g "$user" -m 0700 "$run_dir/launch"
    echo "$run_dir/launch"
}

start() {
    if pid=$(running_pid); then
        say "the broker runs already (pid $pid)"
        return 0
    fi
    launch_dir=$(prepare_run_dir)
    install -d -o "$user" -g "$user" -m 0700 "$state_dir"
    rm -f "$run_dir/broker.sock"
    setsid setpriv --reuid="$user" --regid="$user" --init-groups \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$state_dir" \
        XDG_CONFIG_HOME="$state_dir/config" XDG_STATE_HOME="$state_dir/state" \
        XDG_CACHE_HOME="$state_dir/cache" XDG_DATA_HOME="$state_dir/data" \
        SANDSHIM_AUDIT_DB="$state_dir/audit.db" SANDSHIM_BROKER=off SANDSHIM_LOG=info \
        "$bin" broker --socket "$run_dir/broker.sock" --system-config "$system_config" \
        --launch-dir "$launch_dir" >>"$state_dir/broker.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    i=0
    while [ $i -lt 100 ]; do
        [ -S "$run_dir/broker.sock" ] && { say "broker started (pid $(cat "$pidfile"))"; return 0; }
        kill -0 "$(cat "$pidfile")" 2>/dev/null || break
        sleep 0.05
        i=$((i + 1))
    done
    say "the broker did not start; its log ($state_dir/broker.log):"
    tail -n 5 "$state_dir/broker.log" >&2
    return 1
}

stop() {
    if pid=$(running_pid); then
        kill "$pid"
        i=0
        while [ $i -lt 100 ] && kill -0 "$pid" 2>/dev/null; do
            sleep 0.05
            i=$((i + 1))
        done
        say "broker stopped (pid $pid)"
    fi
    rm -f "$pidfile"
}

case ${1:-} in
    start) start ;;
    stop) stop ;;
    restart | force-reload) stop && start ;;
    status)
        if pid=$(running_pid); then
            say "the broker runs (pid $pid, socket $run_dir/broker.sock)"
        else
            say "the broker is not running"
            exit 3
        fi
        ;;
    *)
        echo "usage: $0 start|stop|restart|status" >&2
        exit 2
        ;;
esac
