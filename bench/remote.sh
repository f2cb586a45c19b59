#!/usr/bin/env bash
# A python call in a ~50 MB repository on a remote engine (engine.endpoint = tcp://… with TLS),
# next to the same call on the local engine. The remote engine is a second dockerd in network and
# mount namespaces of this script's own (tests/integration/remote_engine.sh: TLS certificates
# made here, traffic only between a veth pair's two private addresses), so "remote" measures
# the transfer and the TLS transport, not a real network's latency. Variants, interleaved round
# by round in a fresh random order (bench/lib/rounds.sh):
#   local          `sandshim run -- python …` on the local engine
#   remote-first   the same on the remote engine after one file of the tree changed and the
#                  digest cache was dropped: the whole tree hashed, packed and sent (a new
#                  snapshot volume)
#   remote-repeat  the same on the remote engine with the tree unchanged: the snapshot is reused
# Prints each variant's p50 and p95 and the ratios of the p50s to local's. Asserts nothing.
#
#   sudo bench/remote.sh [BUILD_DIR]          N=9 MB=50 bench/remote.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/rounds.sh
. "$here/lib/rounds.sh"
build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
runs=${N:-9}
megabytes=${MB:-50}
[[ -x $bin ]] || { echo "remote.sh: $bin is missing: build the sandshim target first" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "remote.sh: the second dockerd needs root" >&2; exit 2; }

# What remote_engine.sh expects of its host script.
SUITE=remote.sh
say() { printf '%s: %s\n' "$SUITE" "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
skip_or_fail() { fail "$@"; }
ms_since() { echo $(((${EPOCHREALTIME/./} - ${1/./}) / 1000)); }
T=$(mktemp -d /tmp/sandshim-remote-bench.XXXXXX)
chmod 755 "$T"
# shellcheck source=../tests/integration/remote_engine.sh
. "$here/../tests/integration/remote_engine.sh"
trap 'remote_engine_stop; rm -rf "$T"' EXIT

export HOME=$T/home XDG_CONFIG_HOME=$T/home/.config XDG_STATE_HOME=$T/home/.local/state
export SANDSHIM_AUDIT_DB=$T/audit.db
mkdir -p "$XDG_CONFIG_HOME" "$XDG_STATE_HOME"
unset DOCKER_HOST DOCKER_CONTEXT DOCKER_CERT_PATH DOCKER_TLS_VERIFY SANDSHIM_CONFIG

remote_engine_start sandshim/python:bookworm

# The repository: a git work tree of MB megabytes in 400 files over 20 packages.
ws=$T/repo
mkdir -p "$ws"
git -C "$ws" init -q
for ((i = 0; i < 400; i++)); do
  mkdir -p "$ws/pkg$((i % 20))"
  head -c $((megabytes * 1024 * 1024 / 400 * 3 / 4)) /dev/urandom | base64 -w 100 > "$ws/pkg$((i % 20))/data$i.txt"
done
printf 'import os\nprint(sum(len(f) for _, _, f in os.walk(".")))\n' > "$ws/main.py"
say "repository: $(du -sm "$ws" | cut -f1) MB in $(find "$ws" -type f | wc -l) files"

printf '[engine]\nname = docker\n' > "$T/local.conf"
printf '[engine]\nname = docker\nendpoint = %s\ntls_cert_path = %s\n' \
  "$REMOTE_ENGINE_ENDPOINT" "$REMOTE_ENGINE_CERTS" > "$T/remote.conf"

variants=(local remote-first remote-repeat)
declare -A samples=()

sample() { # VARIANT: one run's wall milliseconds
  local config=$T/local.conf started
  case $1 in
    remote-first)
      config=$T/remote.conf
      date +%s%N > "$ws/stamp.txt"
      rm -rf "$HOME/.cache/sandshim/snapshots"
      ;;
    remote-repeat) config=$T/remote.conf ;;
  esac
  started=$EPOCHREALTIME
  (cd "$ws" && SANDSHIM_CONFIG=$config "$bin" run -- python main.py < /dev/null > /dev/null 2> "$T/err") ||
    fail "$1: $(cat "$T/err")"
  ms_since "$started"
}

percentile() { # P VALUES...
  local p=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v p="$p" '{v[NR] = $1} END {i = int((NR - 1) * p / 100 + 0.5) + 1; print v[i]}'
}

for variant in "${variants[@]}"; do sample "$variant" > /dev/null; done # warm-up
for ((round = 0; round < runs; round++)); do
  while read -r index; do
    variant=${variants[index]}
    samples[$variant]+=" $(sample "$variant")"
  done < <(round_order "${#variants[@]}")
done

say "seed $bench_seed, $runs rounds"
local_p50=$(percentile 50 ${samples[local]})
printf '%-14s %4s %8s %8s %10s\n' variant runs p50_ms p95_ms vs_local
for variant in "${variants[@]}"; do
  # shellcheck disable=SC2086 # the samples are words on purpose
  p50=$(percentile 50 ${samples[$variant]})
  p95=$(percentile 95 ${samples[$variant]})
  # shellcheck disable=SC2086
  printf '%-14s %4s %8s %8s %9.2fx\n' "$variant" "$(wc -w <<<"${samples[$variant]}")" "$p50" "$p95" \
    "$(echo "$p50 / $local_p50" | bc -l)"
done
