#!/usr/bin/env bash
# Many-invocation workloads as agents produce them, run natively (NATIVE_PYTHON, default
# /usr/bin/python3), through the shims cold (pool.size = 0), and warm with the launcher and with
# exec (pool.size = POOL_SIZE); prints wall times, ratios to native, and how many runs of each warm
# script were served warm (the audit's `warm`). Asserts nothing.
#   - a host shell script that calls `python3 -c` CALLS times (default 200);
#   - a Debian-packaged project's own test suite: pyflakes' tests as python3-pyflakes ships them
#     (with the script its integration tests start, from pyflakes3; install/deps.sh installs both),
#     copied into the workspace so that both sides run the very same files, one interpreter call
#     per test file (`python3 -m unittest pyflakes.test.test_NAME`) as a runner that isolates
#     files runs them, SUITE_ROUNDS times (default 2; 0 leaves it out). Each file's summary
#     (tests run, OK or FAILED) through the shims is compared with its native one (as root one
#     differs: test_api skips its permission test natively and runs it as the sandbox's user).
#
#   bench/many_calls.sh [BUILD_DIR]     CALLS=200 POOL_SIZE=4 SUITE_ROUNDS=2 bench/many_calls.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
calls=${CALLS:-200}
pool_size=${POOL_SIZE:-4}
suite_rounds=${SUITE_ROUNDS:-2}
work=$(mktemp -d /tmp/sandshim-many.XXXXXX)
chmod 755 "$work"
cleanup() {
  for conf in "$work"/*.conf; do
    SANDSHIM_CONFIG=$conf "$bin" pool drain > /dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/data XDG_CACHE_HOME=$work/cache SANDSHIM_AUDIT_DB=$work/audit.db
unset SANDSHIM_CONFIG SANDSHIM_LOG DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG
mkdir -p "$HOME" "$work/workspace" "$work/shims"
chmod 755 "$work/workspace"
cd "$work/workspace"
ln -s "$bin" "$work/shims/python3"
# Native is the system interpreter itself: a version manager's shim first on PATH (pyenv's is a
# bash script) would add its own start-up to every native call and flatter the ratios.
mkdir -p "$work/native"
ln -s "${NATIVE_PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}" "$work/native/python3"
# A test file may take longer than the default deadline on a loaded machine.
printf '[pool]\nsize = 0\n[sandbox]\ntimeout = 5m\n' > "$work/cold.conf"
printf '[pool]\nsize = %s\nstart = launcher\n[sandbox]\ntimeout = 5m\n' "$pool_size" > "$work/launcher.conf"
printf '[pool]\nsize = %s\nstart = exec\n[sandbox]\ntimeout = 5m\n' "$pool_size" > "$work/exec.conf"

# The agent's script: one short interpreter call after another, each checking its output.
cat > "$work/script.sh" << SCRIPT
for i in \$(seq $calls); do
  [ "\$(python3 -c 'print(6 * 7)')" = 42 ] || { echo "call \$i failed" >&2; exit 1; }
done
SCRIPT

# The suite's files, copied with their times (cp -a): Debian's .pyc stay valid on both sides.
suite_modules=()
k_pyflakes=/usr/lib/python3/dist-packages/pyflakes
if ((suite_rounds > 0)); then
  if [[ ! -d $k_pyflakes/test || ! -x /usr/bin/pyflakes3 ]]; then
    echo "many_calls.sh: pyflakes' tests or its script are missing: run install/deps.sh" >&2
    exit 2
  fi
  cp -a "$k_pyflakes" /usr/lib/python3/dist-packages/pyflakes-*info "$work/workspace/"
  mkdir -p "$work/workspace/bin"
  cp -a /usr/bin/pyflakes3 "$work/workspace/bin/pyflakes"  # where its integration tests look
  for file in "$work"/workspace/pyflakes/test/test_*.py; do
    module=${file#"$work/workspace/"}
    module=${module%.py}
    suite_modules+=("${module//\//.}")
  done
  mkdir -p "$work/results"
  cat > "$work/suite.sh" << SCRIPT
# One interpreter call per test file; each file's summary in RESULTS/MODULE.ROUND.
results=\$1
for round in \$(seq $suite_rounds); do
  for module in ${suite_modules[*]}; do
    python3 -m unittest "\$module" > "\$results/\$module.\$round" 2>&1
  done
done
exit 0
SCRIPT
fi

wall_s() { # CONFIG PATH_PREFIX SCRIPT [ARG]: the script's wall time in seconds
  local start=$EPOCHREALTIME
  SANDSHIM_CONFIG=$1 PATH=$2$PATH bash "$3" "${@:4}" < /dev/null > /dev/null
  awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.2f", e - s }'
}
warm_runs_since() { # START_MS
  "$bin" audit sql "SELECT count(*) AS n FROM runs WHERE warm = 1 AND start_ms >= $1" --jsonl |
    sed -n 's/.*"n":\([0-9]*\).*/\1/p'
}

# What must be the same natively and through the shims: each file's tests run and outcome.
summaries() { # DIR
  local file
  for file in "$1"/*; do
    printf '%s %s\n' "${file##*/}" "$(grep -E '^(Ran [0-9]+ test|OK|FAILED)' "$file" | sed -E 's/ in [0-9.]+s$//' | tr '\n' ' ')"
  done
}

# One workload natively, then cold, warm with the launcher and with exec.
workload() { # TITLE RUNS SCRIPT
  local title=$1 runs=$2 script=$3 native t conf variant since warm label out extra
  echo "== $title, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  out=$work/results/native
  mkdir -p "$out"
  native=$(wall_s "$work/cold.conf" "$work/native:" "$script" "$out")
  printf '  %-24s %8s s\n' native "$native"
  for variant in cold launcher exec; do
    conf=$work/$variant.conf
    if [[ $variant != cold ]]; then
      SANDSHIM_CONFIG=$conf "$bin" pool fill python3 > /dev/null
    fi
    out=$work/results/$variant
    mkdir -p "$out"
    since=$(date +%s%3N)
    t=$(wall_s "$conf" "$work/shims:" "$script" "$out")
    warm=$(warm_runs_since "$since")
    label=$variant
    [[ $variant == cold ]] || label="warm ($variant, pool $pool_size)"
    extra=""
    if [[ -n $(ls -A "$work/results/native") ]]; then
      extra="; $(diff <(summaries "$work/results/native") <(summaries "$out") | grep -c '^>' || true) of $(find "$out" -type f | wc -l) summaries differ from native"
    fi
    printf '  %-24s %8s s  %6.2fx native  %s of %s runs warm%s\n' "$label" "$t" \
      "$(awk -v a="$t" -v b="$native" 'BEGIN { print a / b }')" "${warm:-0}" "$runs" "$extra"
  done
  rm -rf "$work/results"/*
}

workload "$calls calls of python3 -c" "$calls" "$work/script.sh"
if ((suite_rounds > 0)); then
  workload "pyflakes' test suite, ${#suite_modules[@]} files x $suite_rounds rounds, one call each" \
    $((${#suite_modules[@]} * suite_rounds)) "$work/suite.sh"
fi
