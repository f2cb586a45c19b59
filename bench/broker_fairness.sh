#!/usr/bin/env bash
# Per-user fairness of the broker: how long one user's `sh -c true` takes through the broker while
# another user floods it with FLOOD concurrent `sh -c 'sleep 3'` runs, next to the same user's
# latency on an idle broker. Two brokers are compared: --max-runs-per-user CAP (the flood waits in
# its own uid's queue) and --max-runs-per-user FLOOD (no effective cap). Asserts nothing.
#
#   bench/broker_fairness.sh [BUILD_DIR]      (as root; default build)
#   N=10 FLOOD=32 CAP=4 bench/broker_fairness.sh
#
# The flooding user is root (container user 65534), the measured one a plain test user outside
# the engine's group; both are clients of a private broker run as the system user `sandshim`.
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
runs=${N:-10}
flood=${FLOOD:-32}
cap=${CAP:-4}
readonly k_user=sandshim-broker-nd

[[ $(id -u) == 0 ]] || {
  echo "broker_fairness.sh: needs root (the broker's user and a second user)" >&2
  exit 2
}
# shellcheck source=../install/lib/testuser.sh
. "$(dirname "${BASH_SOURCE[0]}")/../install/lib/testuser.sh"
# shellcheck source=../install/lib/broker.sh
. "$(dirname "${BASH_SOURCE[0]}")/../install/lib/broker.sh"
broker_ensure_user > /dev/null
ensure_plain_test_user "$k_user" > /dev/null

work=$(mktemp -d /tmp/sandshim-fairness.XXXXXX)
chmod 755 "$work"
flood_pids=()
stop_flood() {
  local pid
  for pid in "${flood_pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${flood_pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  flood_pids=()
}
trap 'stop_flood; broker_stop_if_started; chattr -a "$work"/anchors-*/anchor.log 2> /dev/null; rm -rf "$work"' EXIT
install -m 755 "$bin" "$work/sandshim"
broker_install_companions "$bin" "$work"
mkdir -p "$work/ws" && chmod 755 "$work/ws"
uid=$(id -u "$k_user")
gid=$(id -g "$k_user")

client() { # AS-ROOT|AS-USER CMD...
  local who=$1
  shift
  local -a env=(env -i PATH=/usr/bin:/bin HOME=/tmp SANDSHIM_BROKER=required
    SANDSHIM_BROKER_SOCKET="$work/run/broker.sock")
  if [[ $who == user ]]; then
    (cd "$work/ws" && setpriv --reuid="$uid" --regid="$gid" --init-groups "${env[@]}" "$work/sandshim" "$@")
  else
    (cd "$work/ws" && "${env[@]}" "$work/sandshim" "$@")
  fi
}

# p50 and p95 of the measured user's `sh -c true`, in ms.
measure() {
  local samples="" i start
  for ((i = 0; i < runs; i++)); do
    start=$EPOCHREALTIME
    client user run -- sh -c true < /dev/null > /dev/null 2>&1 || true
    samples+="$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (e - s) * 1000 }') "
  done
  tr ' ' '\n' <<< "$samples" | grep -v '^$' | sort -g |
    awk '{ v[NR] = $1 } END { printf "p50 %s p95 %s", v[int((NR * 50 + 99) / 100)], v[int((NR * 95 + 99) / 100)] }'
}

start_flood() {
  local i
  for ((i = 0; i < flood; i++)); do
    while :; do client root run --timeout 60s -- sh -c 'sleep 3' < /dev/null > /dev/null 2>&1 || true; done &
    flood_pids+=($!)
  done
  sleep 2
}

echo "== broker fairness: $runs runs of the measured user's sh -c true; flood: $flood concurrent sleep-3 runs of root"
echo "  $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for limit in "$cap" "$flood"; do
  # Each broker its own policy file, database and anchor log, never /etc/sandshim/config's: an
  # anchor log belongs to one chain.
  broker_write_system_config "$work/etc/config-$limit" "$work/broker-$limit" "$work/anchors-$limit"
  broker_start "$work/sandshim" "$work/run/broker.sock" "$work/broker-$limit" \
    --system-config "$work/etc/config-$limit" --max-runs-per-user "$limit"
  client user run -- sh -c true < /dev/null > /dev/null 2>&1 || true # warm-up
  idle=$(measure)
  start_flood
  busy=$(measure)
  stop_flood
  broker_stop_if_started
  printf '  --max-runs-per-user %-3s idle: %-24s under the flood: %s\n' "$limit" "$idle" "$busy"
done
