# shellcheck shell=bash
# A private broker for a bench, as setup installs one: the broker's system user, a root-owned
# copy of the binary with its companions, a system file with TAIL, its socket in WORK/run. Root
# only. Stop it with `broker_stop_if_started` (and remove WORK: its anchor log is append-only).
#
#   . bench/lib/private_broker.sh
#   private_broker_start WORK BIN [TAIL]     # sets PRIVATE_BIN and PRIVATE_SOCKET
here_private_broker=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=../../install/lib/common.sh
. "$here_private_broker/../../install/lib/common.sh"
# shellcheck source=../../install/lib/broker.sh
. "$here_private_broker/../../install/lib/broker.sh"

private_broker_start() { # WORK BIN [TAIL]
  local work=$1 bin=$2 tail_text=${3:-}
  broker_ensure_user >/dev/null
  install -d -m 755 "$work" "$work/bin"
  install -m 755 "$bin" "$work/bin/sandshim"
  broker_install_companions "$bin" "$work/bin"
  broker_write_system_config "$work/etc/config" "$work/state" "$work/anchors" "$tail_text"
  broker_start "$work/bin/sandshim" "$work/run/broker.sock" "$work/state" \
    --system-config "$work/etc/config"
  PRIVATE_BIN=$work/bin/sandshim
  PRIVATE_SOCKET=$work/run/broker.sock
}

# Removes WORK once its broker is stopped.
private_broker_remove() { # WORK
  broker_stop_if_started
  chattr -a "$1/anchors/anchor.log" 2>/dev/null
  rm -rf "$1"
}
