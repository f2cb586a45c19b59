#!/usr/bin/env bash
# Measures the audit database through the real code: the cost a shim pays per run, insert
# throughput, and `sandshim audit` on a database of 1,000,000 generated rows. Prints figures; asserts
# nothing. The database is kept in WORK, so a second run skips the generation.
#
#   bench/audit.sh [BUILD_DIR]        (default: build)
#   ROWS=1000000 WORK=/tmp/sandshim-audit-bench SANDSHIM_BIN=build/cli/sandshim bench/audit.sh
set -euo pipefail

build=${1:-build}
bench=${AUDIT_BENCH:-$build/bench/sandshim_audit_bench}
rows=${ROWS:-1000000}
work=${WORK:-/tmp/sandshim-audit-bench}
if [[ ! -x $bench ]]; then
  echo "audit.sh: $bench is missing: build the sandshim_audit_bench target first" >&2
  exit 2
fi
mkdir -p "$work"
if [[ -z ${SANDSHIM_BIN:-} && -x $build/sandshim ]]; then
  SANDSHIM_BIN=$build/sandshim
fi

# `sandshim audit ARGS`: the real binary when there is one, else the same code in the bench binary.
audit() {
  if [[ -n ${SANDSHIM_BIN:-} ]]; then
    "$SANDSHIM_BIN" audit "$@"
  else
    "$bench" audit "$@"
  fi
}

# Best and worst wall time of three runs of `sandshim audit ARGS`.
time_audit() {
  local best=999999 worst=0 start elapsed
  for _ in 1 2 3; do
    start=$(date +%s%N)
    audit --db "$work/big.db" "$@" > /dev/null
    elapsed=$((($(date +%s%N) - start) / 1000000))
    ((elapsed < best)) && best=$elapsed
    ((elapsed > worst)) && worst=$elapsed
  done
  printf '  %-36s best %5d ms  worst %5d ms\n' "audit $*" "$best" "$worst"
}

echo "== this machine"
echo "  $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(df -T "$work" | awk 'NR == 2 {print $2}') under $work"
dd if=/dev/zero of="$work/fsync-probe" bs=4k count=200 oflag=dsync 2>&1 |
  awk '/copied/ {printf "  4 KiB synchronous writes: %.2f ms each\n", $(NF-3) / 200 * 1000}'
rm -f "$work/fsync-probe"

echo "== cost per run: each shim opens the store, marks abandoned runs, begins and completes"
rm -f "$work"/per-run.db*
"$bench" per-run "$work/per-run.db" 2000 | sed 's/^/  /'

echo "== insert throughput: begin+complete pairs on one open store"
rm -f "$work"/throughput.db*
"$bench" throughput "$work/throughput.db" 20000 | sed 's/^/  /'

echo "== $rows generated rows"
existing=0
if [[ -f $work/big.db ]]; then
  existing=$(audit --db "$work/big.db" sql "SELECT count(*) FROM runs" --csv | tail -1)
fi
if ((existing < rows)); then
  rm -f "$work"/big.db*
  "$bench" generate "$work/big.db" "$rows" | sed 's/^/  /'
fi
echo "  $(du -h "$work/big.db" | cut -f1) on disk"
"$bench" per-run "$work/big.db" 500 | sed 's/^/  /'
time_audit stats --json
time_audit stats --by day --csv
time_audit stats --since 7d --json
time_audit list --limit 50 --table
time_audit list --status oom --image 'node:*' --limit 50 --jsonl
time_audit export --since 1d
time_audit verify
