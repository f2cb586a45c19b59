#!/usr/bin/env bash
# Measures the audit database through the real code: the cost a shim pays per run, insert
# throughput, and `sandshim audit` on a database of 1,000,000 generated rows. Prints figures; asserts
# nothing. The database is kept in WORK, so a second run skips the generation.
#
#   bench/audit.sh [BUILD_DIR]        (default: build)
#   ROWS=1000000 WORK=/tmp/sandshim-audit-bench SANDSHIM_BIN=build/cli/sandshim bench/audit.sh
#
# Before/after: BASELINE=/path/to/sandshim_audit_bench (built from the code before a change, e.g.
#   git worktree add /tmp/audit-base main && cmake -S /tmp/audit-base -B /tmp/audit-base/build &&
#   cmake --build /tmp/audit-base/build --target sandshim_audit_bench)
# prints both side by side first: per-run cost on one open store (unkeyed and keyed, as the
# broker writes), WAL pages a run writes, and a shim's open. ROUNDS (default 4) alternate which
# goes first; ONLY_COMPARE=1 stops after the comparison.
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

# The p50 (in us) on the line of BIN's output that starts with LABEL.
p50_of() {
  awk -v label="$1" 'index($0, label) == 1 { for (i = 1; i < NF; ++i) if ($i == "p50") print $(i + 1) }'
}

# Mean CPU per run (ms, checkpoints included) from a throughput line.
cpu_of() {
  awk '/ms\/run, CPU/ { for (i = 1; i < NF; ++i) if ($i == "CPU") print $(i + 1) }'
}

# WAL pages one begin+complete writes: the WAL's growth over 25 runs, before any checkpoint
# (25 runs stay under wal_autocheckpoint's 500 pages; the first run also wrote the schema).
wal_pages_per_run() {
  local bin=$1 db=$work/pages.db first last
  rm -f "$db" "$db"-wal "$db"-shm
  "$bin" throughput "$db" 1 > /dev/null
  first=$(stat -c %s "$db-wal")
  "$bin" throughput "$db" 25 > /dev/null
  last=$(stat -c %s "$db-wal")
  awk -v a="$first" -v b="$last" 'BEGIN { printf "%.1f", (b - a) / (4096 + 24) / 25 }'
}

# One variant's figures, as "wall_p50 cpu keyed_p50 keyed_cpu open_p50 writes_p50".
measure_variant() {
  local bin=$1 db=$work/compare.db out keyed per_run
  rm -f "$db" "$db"-wal "$db"-shm
  out=$("$bin" throughput "$db" 2000)
  rm -f "$db" "$db"-wal "$db"-shm "$work"/compare.key
  : > "$work/compare.anchor"  # the anchor log must exist (the broker's is made by setup)
  keyed=$("$bin" throughput "$db" 2000 "$work/compare.key" "$work/compare.anchor")
  rm -f "$db" "$db"-wal "$db"-shm
  per_run=$("$bin" per-run "$db" 300)
  echo "$(p50_of '  each run' <<< "$out") $(cpu_of <<< "$out")" \
    "$(p50_of '  each run' <<< "$keyed") $(cpu_of <<< "$keyed")" \
    "$(p50_of 'open+gc+begin' <<< "$per_run") $(p50_of 'begin+complete' <<< "$per_run")"
}

compare_with_baseline() {
  local rounds=${ROUNDS:-4} round first second
  echo "== before ($BASELINE) and after ($bench), side by side"
  printf '  WAL pages per run (begin+complete): before %s  after %s\n' \
    "$(wal_pages_per_run "$BASELINE")" "$(wal_pages_per_run "$bench")"
  printf '  %-6s %-7s | %-24s | %-24s | %-26s\n' round variant \
    "one store: p50, CPU/run" "keyed store: p50, CPU/run" "shim: open+all p50, writes"
  for ((round = 1; round <= rounds; ++round)); do
    if ((round % 2 == 1)); then first=before second=after; else first=after second=before; fi
    for variant in $first $second; do
      local bin=$bench
      [[ $variant == before ]] && bin=$BASELINE
      read -r wall cpu kwall kcpu open writes <<< "$(measure_variant "$bin")"
      printf '  %-6s %-7s | %6s us  %6s ms     | %6s us  %6s ms     | %7s us  %7s us\n' \
        "$round" "$variant" "$wall" "$cpu" "$kwall" "$kcpu" "$open" "$writes"
    done
  done
}

if [[ -n ${BASELINE:-} ]]; then
  compare_with_baseline
  [[ -n ${ONLY_COMPARE:-} ]] && exit 0
fi

echo "== cost per run: each shim opens the store, marks abandoned runs, begins and completes"
rm -f "$work"/per-run.db*
"$bench" per-run "$work/per-run.db" 2000 | sed 's/^/  /'

echo "== a shim's open alone, and with another connection kept open (no -shm reset, WAL index shared)"
rm -f "$work"/open.db*
"$bench" open-cost "$work/open.db" 300 | sed 's/^/  /'

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
