#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from its seed corpus, on one core, and fails on
# any finding. New inputs go to a scratch corpus, never into the repository; a crashing input is
# kept in the build tree and printed (libFuzzer prints it as base64 too) so CI logs carry it.
# Usage: run_target.sh <fuzzer binary> <seed corpus dir> <seconds>
set -euo pipefail

fuzzer=$1 seeds=$2 seconds=$3
name=$(basename "$fuzzer")
artifacts="$(dirname "$fuzzer")/fuzz-artifacts/$name"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/sandshim-$name-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$artifacts"

# -timeout: one input taking 10 s is a hang; -rss_limit_mb: runaway memory is a finding.
rc=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$scratch" "$seeds" || rc=$?
if ((rc != 0)); then
    echo "$name: finding (exit $rc); reproduce with: $fuzzer $artifacts/<crash file>" >&2
    ls -l "$artifacts" >&2
fi
exit "$rc"
