#!/usr/bin/env bash
# One audit for a fleet, with the real binary and no engine: two hosts (two HOMEs, two state
# directories, two databases) record refused runs with hostile bytes in their argv, each exports
# its chain (`audit export --format fleet`), the exports are merged line by line, and
# `audit verify --export` passes; then one edited row, one dropped row, two swapped rows and a
# cut-off tail each fail with their fault, host and position, and queries read the merged file.
# The stores are direct mode's (unkeyed); keyed stores and the keys are in test_audit_fleet.cpp.
# Usage: SANDSHIM_BIN=build/sandshim bash tests/integration/audit_fleet.sh
set -euo pipefail
bin=$(realpath "${SANDSHIM_BIN:?set SANDSHIM_BIN to the sandshim binary}")
py=$(command -v /usr/bin/python3 || command -v python3 || true)
if [[ -z $py ]]; then
    echo "SKIP: no python3 to edit the JSON lines" >&2
    exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# as_host NAME ARGS...: sandshim as one host's user, from / (a refused workspace: no engine).
as_host() {
    local name=$1
    shift
    (cd / && env -i PATH=/usr/bin:/bin HOME="$T/$name" XDG_STATE_HOME="$T/$name/state" \
        XDG_CONFIG_HOME="$T/$name/config" SANDSHIM_BROKER=off "$bin" "$@")
}

for host in alpha beta; do
    mkdir -p "$T/$host"
    for i in 1 2 3 4; do
        as_host "$host" run -- python -c "print($i)" $'\e[31m\n' $'\xff' 2>/dev/null && fail "a run from / ran"
    done
    as_host "$host" audit export --format fleet --hostname "$host" >"$T/$host.jsonl"
done

# The two exports interleaved, as a collector receiving both streams writes them.
"$py" - "$T/alpha.jsonl" "$T/beta.jsonl" >"$T/merged.jsonl" <<'EOF'
import itertools, sys
a, b = (open(p).read().splitlines() for p in sys.argv[1:3])
for x, y in itertools.zip_longest(a, b):
    for line in (x, y):
        if line is not None:
            print(line)
EOF

if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$T/merged.jsonl"; then
    fail "a raw control byte in the export"
fi

# tamper NAME SCRIPT: the merged file changed by the python SCRIPT (lines in `rows`, a list of
# parsed records, and `find(host, seq)`, the index of that row), written to $T/NAME.jsonl.
tamper() {
    "$py" - "$T/merged.jsonl" >"$T/$1.jsonl" <<EOF
import json, sys
lines = open(sys.argv[1]).read().splitlines()
rows = [json.loads(line) for line in lines]
def find(host, seq):
    return next(i for i, r in enumerate(rows) if r["record"] == "row" and r["host"] == host and r["seq"] == seq)
$2
for line in lines:
    print(line)
EOF
}

# expect_fault NAME FAULT HOST SEQ: verify of $T/NAME.jsonl exits 1 naming exactly that fault.
expect_fault() {
    local out code=0
    out=$("$bin" audit verify --export "$T/$1.jsonl" 2>&1) || code=$?
    [[ $code == 1 ]] || fail "$1: verify exited $code, expected 1: $out"
    grep -q "FAILED ($2) host $3 position $4 " <<<"$out" || fail "$1: no '$2' at $3 position $4 in: $out"
    [[ $(grep -c 'FAILED (' <<<"$out") == 1 ]] || fail "$1: more than one fault: $out"
}

out=$("$bin" audit verify --export "$T/merged.jsonl") || fail "the merged export does not verify: $out"
grep -q "host alpha (chain [0-9a-f]*): 4 rows, positions 1 to 4, head 4, unkeyed: ok" <<<"$out" ||
    fail "alpha's summary: $out"
grep -q "^ok: 2 hosts, 0 faults$" <<<"$out" || fail "the summary: $out"

tamper edited 'i = find("alpha", 2); rows[i]["columns"]["message"] += "!"; lines[i] = json.dumps(rows[i])'
expect_fault edited changed alpha 2
tamper dropped 'del lines[find("beta", 2)]'
expect_fault dropped gap beta 2
tamper swapped 'i, j = find("beta", 2), find("beta", 3); lines[i], lines[j] = lines[j], lines[i]'
expect_fault swapped reordered beta 2
tamper truncated 'del lines[find("alpha", 4)]'
expect_fault truncated truncated alpha 4

# Queries read the merged export like a database, and nothing raw reaches the output.
n=$("$bin" audit sql "SELECT count(*) AS n FROM runs" --export "$T/merged.jsonl" --csv | tail -1)
[[ $n == 8 ]] || fail "sql over the merged export counted $n runs, expected 8"
n=$("$bin" audit sql "SELECT count(*) AS n FROM runs JOIN exported ON exported.id = run_id WHERE exported.host = 'beta'" \
    --export "$T/merged.jsonl" --csv | tail -1)
[[ $n == 4 ]] || fail "beta's runs in the merged export: $n, expected 4"
n=$("$bin" audit list --export "$T/merged.jsonl" --status refused --csv | tail -n +2 | wc -l)
[[ $n == 8 ]] || fail "list --status refused gave $n rows, expected 8"
if "$bin" audit list --export "$T/merged.jsonl" --table | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]'; then
    fail "a raw control byte in the table"
fi

# --follow: a running export writes the rows chained after it started, after a new head.
env -i PATH=/usr/bin:/bin HOME="$T/alpha" XDG_STATE_HOME="$T/alpha/state" SANDSHIM_BROKER=off \
    "$bin" audit export --format fleet --hostname alpha --follow --output "$T/follow.jsonl" &
exporter=$!
for i in 5 6; do
    as_host alpha run -- python -c "print($i)" 2>/dev/null && fail "a run from / ran"
done
rows=0
for _ in $(seq 100); do
    rows=$(grep -c '"record":"row"' "$T/follow.jsonl" || true)
    ((rows >= 6)) && break
    sleep 0.1
done
kill "$exporter"
wait "$exporter" 2>/dev/null || true
[[ $rows == 6 ]] || fail "--follow wrote $rows rows, expected 6"
out=$("$bin" audit verify --export "$T/follow.jsonl") || fail "the followed export does not verify: $out"
grep -q "6 rows, positions 1 to 6, head 6" <<<"$out" || fail "the followed export: $out"

if ((failures > 0)); then
    echo "$failures failures" >&2
    exit 1
fi
echo "audit fleet: all checks passed"
