#!/usr/bin/env bash
# The broker's part of install/setup.sh (needs root; re-runs itself with sudo): installs the
# binary root-owned in /usr/local/bin, creates the system user `sandshim` in the engine's group,
# its state directory /var/lib/sandshim and the socket directory /run/sandshim, then starts the
# broker: through systemd units when systemd runs, else detached with its log in
# /var/lib/sandshim/broker.log (left running, like the engine; re-running restarts it).
# Usage: install/broker_setup.sh BUILT-BINARY
set -euo pipefail

SANDSHIM_PREFIX=sandshim-setup
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/broker.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/broker.sh"

readonly k_installed_bin=/usr/local/bin/sandshim
readonly k_units_dir=/etc/systemd/system

install_units() {
    local unit
    for unit in sandshim.socket sandshim.service; do
        sed "s|/usr/bin/sandshim|$k_installed_bin|" "$(repo_root)/packaging/systemd/$unit" >"$k_units_dir/$unit"
    done
    systemctl daemon-reload
    systemctl restart sandshim.socket
    systemctl enable sandshim.socket >/dev/null 2>&1
    say "broker: systemd units installed and sandshim.socket started (systemctl status sandshim)"
}

# Without systemd: stop a broker an earlier run started, start this build's detached.
start_detached() {
    local pidfile=$k_broker_home/broker.pid old
    old=$(cat "$pidfile" 2>/dev/null || true)
    if [[ -n $old ]] && [[ $(cat "/proc/$old/comm" 2>/dev/null) == sandshim ]]; then
        kill "$old" && say "broker: stopped the broker an earlier set-up started (pid $old)"
    fi
    broker_start "$k_installed_bin" "$k_broker_socket_dir/broker.sock" "$k_broker_home" ||
        die "the broker did not start"
    broker_started_pid >"$pidfile"
    say "broker: started detached (pid $(cat "$pidfile"), log $k_broker_home/broker.log); after a reboot re-run install/setup.sh"
}

main() {
    local bin=${1:?usage: broker_setup.sh BUILT-BINARY}
    bin=$(readlink -f "$bin")
    reexec_as_root "${BASH_SOURCE[0]}" "$bin"
    install -m 0755 "$bin" "$k_installed_bin"
    broker_ensure_user || die "cannot set up the broker's user (see above)"
    if [[ -d /run/systemd/system ]]; then
        install_units
    else
        start_detached
    fi
}

main "$@"
