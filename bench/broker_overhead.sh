#!/usr/bin/env bash
# What the broker costs, measured (needs root: the users and a private broker):
#  - per run, from the worker's debug log on CLOCK_MONOTONIC: request sent -> the engine client
#    started (the broker's and the run path's work before the engine), and the engine client's
#    exit -> the client's exit (after it); p50/p95.
#  - end to end, broker mode and direct mode side by side, the order alternating every round.
#  - the audit cost per run with the database kept open, unkeyed and keyed+anchored as the
#    broker's (sandshim_audit_bench throughput).
#  - the broker's memory (Pss) at idle, and its processes' total under 32 concurrent runs.
# Timings are printed, never asserted.
#
#   RUNS=40 SANDSHIM_BIN=build/sandshim bench/broker_overhead.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
runs=${RUNS:-40}
bin=$(readlink -f "${SANDSHIM_BIN:-$here/../build/sandshim}")
audit_bench=$(dirname "$bin")/bench/sandshim_audit_bench
[[ $(id -u) == 0 ]] || { echo "broker_overhead.sh: needs root (users, the broker)" >&2; exit 2; }
# shellcheck source=../install/lib/broker.sh
. "$here/../install/lib/broker.sh"
# shellcheck source=../install/lib/testuser.sh
. "$here/../install/lib/testuser.sh"
readonly user=sandshim-broker2-nd
broker_ensure_user >/dev/null
ensure_plain_test_user "$user" >/dev/null

work=$(mktemp -d /tmp/sandshim-broker-overhead.XXXXXX)
chmod 755 "$work"
trap 'broker_stop_if_started; chattr -a "$work/anchors/anchor.log" 2>/dev/null; rm -rf "$work"' EXIT
install -d -m 755 "$work/bin"
install -m 755 "$bin" "$work/bin/sandshim"
broker_install_companions "$bin" "$work/bin"
broker_write_system_config "$work/etc/config" "$work/broker" "$work/anchors"
broker_start "$work/bin/sandshim" "$work/run/broker.sock" "$work/broker" \
    --system-config "$work/etc/config" --max-runs-per-user 64
mkdir -p "$work/home" "$work/ws/.git"
chown -R "$user:" "$work/home" "$work/ws"
as_user=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups
    env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8)
broker_mode=("${as_user[@]}" SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$work/run/broker.sock")
# Direct mode as root (the test user cannot reach the engine), its own audit database.
direct_mode=(env SANDSHIM_BROKER=off HOME="$work/root-home" XDG_CONFIG_HOME="$work/root-home/.config"
    SANDSHIM_AUDIT_DB="$work/direct.db")
cd "$work/ws"

percentiles() { # VALUES... -> "p50 X p95 Y" (nearest rank)
    printf '%s\n' "$@" | sort -g |
        awk '{ v[NR] = $1 } END { printf "p50 %.2f p95 %.2f", v[int((NR * 50 + 99) / 100)], v[int((NR * 95 + 99) / 100)] }'
}

# One broker run at debug: "BEFORE AFTER OWN" milliseconds: request -> engine client started,
# engine client exited -> client exit, request -> worker started (the broker's own share).
broker_split() {
    "${broker_mode[@]}" SANDSHIM_LOG=debug "$work/bin/sandshim" run -- sh -c true \
        </dev/null 2>&1 >/dev/null |
        awk '/broker: request sent at/ { s = $NF } /run: client started at/ { c = $NF }
             /run: client exited/ { e = $(NF - 3) } /broker: exit received at/ { x = $NF }
             /broker: worker started at/ { w = $NF }
             END { if (s && c && e && x && w) printf "%.3f %.3f %.3f\n", c - s, x - e, w - s }'
}

end_to_end_ms() { # CMD... -> milliseconds of the whole run
    local start=$EPOCHREALTIME
    "$@" "$work/bin/sandshim" run -- sh -c true </dev/null >/dev/null 2>&1
    echo $(((${EPOCHREALTIME/./} - ${start/./}) / 1000))
}

echo "== broker overhead: $runs runs of sh -c true each; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
before=() after=() own=() broker_total=() direct_total=()
for ((i = 0; i < runs; i++)); do
    read -r b a o <<<"$(broker_split)"
    before+=("$b") after+=("$a") own+=("$o")
    if ((i % 2 == 0)); then
        broker_total+=("$(end_to_end_ms "${broker_mode[@]}")")
        direct_total+=("$(end_to_end_ms "${direct_mode[@]}")")
    else
        direct_total+=("$(end_to_end_ms "${direct_mode[@]}")")
        broker_total+=("$(end_to_end_ms "${broker_mode[@]}")")
    fi
done
echo "  request -> engine client started   $(percentiles "${before[@]}") ms"
echo "  engine client exited -> client exit $(percentiles "${after[@]}") ms"
echo "  request -> worker started           $(percentiles "${own[@]}") ms (the broker's own share)"
echo "  end to end, broker mode            $(percentiles "${broker_total[@]}") ms"
echo "  end to end, direct mode            $(percentiles "${direct_total[@]}") ms"

echo "== audit cost per run, database kept open (begin + complete, 2000 runs)"
if [[ -x $audit_bench ]]; then
    "$audit_bench" throughput "$work/plain.db" 2000 | sed 's/^/  /'
    install -d -m 700 "$work/keys"
    install -o root -g root -m 0600 /dev/null "$work/anchor.log" # the anchor log must exist, root's
    "$audit_bench" throughput "$work/keyed.db" 2000 "$work/keys/chain.key" "$work/anchor.log" | sed 's/^/  /'
else
    echo "  n/a (build the sandshim_audit_bench target)"
fi

rss_kib() { # PIDS... -> total proportional set size (Pss: shared pages split) in KiB
    local pid total=0 kib
    for pid in "$@"; do
        kib=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
        total=$((total + ${kib:-0}))
    done
    echo "$total"
}
broker_pids() { pgrep -u sandshim -f "$work/bin/sandshim" || true; }
echo "== broker memory (Pss, KiB)"
echo "  idle: daemon $(rss_kib "$(broker_started_pid)") KiB"
pids=()
for ((i = 0; i < 32; i++)); do
    "${broker_mode[@]}" "$work/bin/sandshim" run -- sh -c 'sleep 4' </dev/null >/dev/null 2>&1 &
    pids+=($!)
done
peak_daemon=0 peak_all=0 peak_n=0
for ((i = 0; i < 30; i++)); do
    sleep 0.2
    mapfile -t all < <(broker_pids)
    d=$(rss_kib "$(broker_started_pid)")
    a=$(rss_kib "${all[@]}")
    ((d > peak_daemon)) && peak_daemon=$d
    ((a > peak_all)) && peak_all=$a peak_n=${#all[@]}
done
wait "${pids[@]}" || true
echo "  32 concurrent runs: daemon $peak_daemon KiB; daemon + sessions + workers $peak_all KiB ($peak_n processes)"
