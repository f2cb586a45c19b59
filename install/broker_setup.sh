#!/usr/bin/env bash
# The broker's part of install/setup.sh (needs root; re-runs itself with sudo): installs the
# binary root-owned in /usr/local/bin, creates the system user `sandshim` in the engine's group,
# its state directory /var/lib/sandshim, writes the safe system file /etc/sandshim/config
# (broker.mode = required, the warm pool on with the launcher, the broker's keyed audit), starts
# the broker with its socket and launch directory on a tmpfs, so that it comes back after a
# reboot: the systemd units where systemd runs, else /etc/init.d/sandshim linked into the
# runlevels by update-rc.d. Then takes the installing user (SUDO_USER) and each
# --remove-from-docker-group USER out of the docker group: with broker.mode = required nobody
# needs it but the broker. Every change is recorded in /etc/sandshim/setup.record, which
# install/uninstall.sh reads to undo them.
# --root DIR puts every file under DIR instead of / (the tests: a broker of its own, its own
# audit and anchor) and installs no systemd unit and no runlevel link; group changes are the
# system's either way.
# Usage: install/broker_setup.sh [--root DIR] [--keep-docker-group] [--remove-from-docker-group USER]... BUILT-BINARY
set -euo pipefail

SANDSHIM_PREFIX=sandshim-setup
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/broker.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/broker.sh"
# shellcheck source-path=SCRIPTDIR source=lib/setup_record.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/setup_record.sh"

readonly k_units_dir=/etc/systemd/system

g_root=""
g_keep_group=0
g_remove=()

usage() {
    cat >&2 <<'USAGE'
usage: install/broker_setup.sh [--root DIR] [--keep-docker-group] [--remove-from-docker-group USER]... BUILT-BINARY
  --root DIR                       install under DIR, not / (tests): no units, no runlevel links
  --keep-docker-group              leave the installing user in the docker group
  --remove-from-docker-group USER  also take USER out of the docker group (repeatable)
USAGE
}

install_units() {
    local unit
    stop_old_detached_broker
    for unit in sandshim.socket sandshim.service; do
        sed "s|/usr/bin/sandshim|$g_installed_bin|" "$(repo_root)/packaging/systemd/$unit" >"$k_units_dir/$unit"
    done
    systemctl daemon-reload
    systemctl restart sandshim.socket
    systemctl enable sandshim.socket >/dev/null 2>&1
    record_add "systemd-units"
    say "broker: systemd units installed, sandshim.socket enabled and started (systemctl status sandshim)"
}

# Without systemd: /etc/init.d/sandshim, in the runlevels (update-rc.d), started now.
install_init_script() {
    local script=$g_root/etc/init.d/sandshim
    stop_old_detached_broker
    [[ ! -x $script ]] || "$script" stop || true
    install -d -m 0755 "$(dirname "$script")"
    sed -e "s|@BIN@|$g_installed_bin|" -e "s|@RUN_DIR@|$g_run_dir|" -e "s|@STATE_DIR@|$g_state_dir|" \
        -e "s|@SYSTEM_CONFIG@|$g_system_config|" -e "s|@PIDFILE@|$g_root/run/sandshim.pid|" \
        "$(repo_root)/packaging/sysvinit/sandshim-init.sh" >"$script.tmp"
    chmod 0755 "$script.tmp"
    mv "$script.tmp" "$script"
    record_add "init-script $script"
    if [[ -z $g_root ]]; then
        update-rc.d sandshim defaults >/dev/null || die "update-rc.d sandshim defaults failed"
        say "broker: $script, started at boot from the runlevel links (update-rc.d sandshim defaults)"
    fi
    "$script" start || die "the broker did not start (see above)"
    [[ $(stat -f -c %T "$g_run_dir") != tmpfs ]] || ! mountpoint -q "$g_run_dir" ||
        record_add "tmpfs $g_run_dir"
}

# An earlier install/setup.sh without an init script started the broker detached.
stop_old_detached_broker() {
    local pidfile=$g_state_dir/broker.pid old
    old=$(cat "$pidfile" 2>/dev/null || true)
    rm -f "$pidfile"
    if [[ -n $old ]] && [[ $(cat "/proc/$old/comm" 2>/dev/null) == sandshim ]]; then
        kill "$old" && say "broker: stopped the broker an earlier set-up started detached (pid $old)"
    fi
}

# The keyed audit of the broker and the safe policy, when the administrator has not written a
# file; a file this script wrote (its digest in the record) is rewritten, any other left alone.
ensure_system_config() {
    local config=$g_system_config tail_text=$k_broker_default_policy
    [[ -z $g_root ]] || tail_text+=$'[broker]\nsocket = '"$g_run_dir/broker.sock"$'\n'
    if [[ -e $config ]] && ! record_owns_file "$config"; then
        grep -q '^key_file' "$config" ||
            warn "$config sets no [audit] key_file: the broker's audit chain stays unkeyed"
        grep -Eq '^[[:space:]]*mode[[:space:]]*=[[:space:]]*required' "$config" ||
            warn "$config is the administrator's and does not set broker.mode = required: add '[broker]' 'mode = required' to it"
        return 0
    fi
    broker_write_system_config "$config" "$g_state_dir" "$g_root/var/log/sandshim" "$tail_text"
    record_file "$config"
    say "broker: wrote $config (broker.mode = required; pool.size = 1, pool.start = launcher; the keyed audit)"
}

# Takes USER out of the docker group, one line, and records it for install/uninstall.sh.
leave_docker_group() {
    local user=$1
    id -u "$user" >/dev/null 2>&1 || die "--remove-from-docker-group: no user '$user'"
    [[ $user != "$k_broker_user" ]] || die "the broker's user $k_broker_user needs the docker group"
    id -nG "$user" | tr ' ' '\n' | grep -qx docker || return 0
    gpasswd -d "$user" docker >/dev/null || die "gpasswd -d $user docker failed"
    record_add "docker-group $user"
    say "removed $user from the docker group (gpasswd -d $user docker; sessions started before keep it until they end; install/uninstall.sh restores it)"
}

# The installing user, unless kept, and the named ones.
leave_docker_groups() {
    local user users=("${g_remove[@]}")
    if ((!g_keep_group)) && [[ -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then
        users=("$SUDO_USER" "${users[@]}")
    fi
    for user in "${users[@]}"; do
        leave_docker_group "$user"
    done
}

parse_args() {
    while (($# > 1)); do
        case $1 in
            --root) g_root=${2%/}; shift ;;
            --keep-docker-group) g_keep_group=1 ;;
            --remove-from-docker-group) g_remove+=("$2"); shift ;;
            *) usage; die "unknown option '$1'" ;;
        esac
        shift
    done
    (($# == 1)) || { usage; die "no BUILT-BINARY given"; }
    g_bin=$(readlink -f "$1")
    [[ -z $g_root || $g_root == /* ]] || die "--root takes an absolute path"
    readonly g_installed_bin=$g_root/usr/local/bin/sandshim g_system_config=$g_root/etc/sandshim/config
    readonly g_state_dir=$g_root/var/lib/sandshim g_run_dir=$g_root/run/sandshim
}

main() {
    reexec_as_root "${BASH_SOURCE[0]}" "$@"
    parse_args "$@"
    record_open "$g_root/etc/sandshim/setup.record"
    install -d -m 0755 "$(dirname "$g_installed_bin")"
    install -m 0755 "$g_bin" "$g_installed_bin"
    record_add "file $g_installed_bin"
    broker_install_companions "$g_bin" "$g_root/usr/local/libexec/sandshim" ||
        die "cannot install the programs the broker runs beside sandshim"
    local program
    for program in "${k_broker_companions[@]}"; do
        record_add "file $g_root/usr/local/libexec/sandshim/$program"
    done
    broker_ensure_user || die "cannot set up the broker's user (see above)"
    ensure_system_config
    if [[ -z $g_root && -d /run/systemd/system ]]; then
        install_units
    else
        install_init_script
    fi
    leave_docker_groups
}

# Sourcing (for tests) defines the functions without running anything.
[[ ${BASH_SOURCE[0]} != "$0" ]] || main "$@"
