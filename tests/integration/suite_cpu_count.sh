#!/usr/bin/env bash
# sandbox.cpus is also what the container counts as CPUs (runners size worker pools by it): under
# a quota below the host's CPUs nproc, Python's os.cpu_count() and os.sched_getaffinity() and
# node's os.availableParallelism() say ceil(quota); at or above the host's count they say the
# host's. Cold and warm.
# sandshim-test-engines: docker podman
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HOST_CPUS=$(nproc)
((HOST_CPUS >= 2)) || skip_or_fail "one CPU on this host: a quota cannot be told from the host's count"

COUNT_SH='echo "nproc=$(nproc)"; exit 42'
COUNT_PY='import os, sys
print(f"cpu_count={os.cpu_count()} affinity={len(os.sched_getaffinity(0))}")
sys.exit(42)'
COUNT_JS='const os = require("os");
console.log(`parallelism=${os.availableParallelism()}`);
process.exit(42);'

cpus_config() { # CPUS [more config lines]
    local cpus=$1
    shift
    printf '[sandbox]\ncpus = %s\n' "$cpus"
    printf '%s\n' "$@"
}

# Each counter through the shim, against the count the container should see.
expect_counts() { # N
    expect_exit 42 sandshim run -- sh -c "$COUNT_SH"
    expect_file_is "$OUT" "nproc=$1"
    expect_exit 42 sandshim run -- python3 -c "$COUNT_PY"
    expect_file_is "$OUT" "cpu_count=$1 affinity=$1"
    expect_exit 42 sandshim run -- node -e "$COUNT_JS"
    expect_file_is "$OUT" "parallelism=$1"
}

check "sandbox.cpus = 1: every counter says 1 CPU"
cpus_config 1 | write_user_config
expect_counts 1
audit_field last engine_args | grep -q -- '--cpuset-cpus=' || fail "engine_args carry no cpuset"

check "control: sandbox.cpus = the host's count ($HOST_CPUS): every counter says $HOST_CPUS"
cpus_config "$HOST_CPUS" | write_user_config
expect_counts "$HOST_CPUS"
audit_field last engine_args | grep -q -- '--cpuset-cpus=' && fail "a cpuset at the host's count"

check "sandbox.cpus above the host's count: the host's count, and the engine gets that quota"
cpus_config $((HOST_CPUS * 4)) | write_user_config
expect_exit 42 sandshim run -- sh -c "$COUNT_SH"
expect_file_is "$OUT" "nproc=$HOST_CPUS"
audit_field last engine_args | grep -q -- "\"--cpus=$HOST_CPUS\"" || fail "the quota is not the host's count"

check "a fractional quota counts whole CPUs, rounded up"
cpus_config 0.5 | write_user_config
expect_exit 42 sandshim run -- sh -c "$COUNT_SH"
expect_file_is "$OUT" "nproc=1"
cpus_config "$((HOST_CPUS - 1)).5" | write_user_config
expect_exit 42 sandshim run -- sh -c "$COUNT_SH"
expect_file_is "$OUT" "nproc=$HOST_CPUS"

check "warm: a pool container counts the quota too"
cpus_config 1 '[pool]' 'size = 1' 'idle_ttl = 2m' | write_user_config
sandshim pool fill python3 >/dev/null || fail "pool fill failed"
expect_exit 42 sandshim run -- python3 -c "$COUNT_PY"
expect_file_is "$OUT" "cpu_count=1 affinity=1"
expect_equal true "$(audit_field last warm)" "warm flag"
sandshim pool drain >/dev/null 2>&1 || true
sleep 1
sandshim pool drain >/dev/null 2>&1 || true
reset_user_config

suite_done
