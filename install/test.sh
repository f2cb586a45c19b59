#!/usr/bin/env bash
# The README's test command, and what CI runs: installs what is missing, makes sure a Docker engine
# answers (stopping it at exit only if this script started it) and podman works, builds the images
# (copied into podman's store too) and the project,
# then runs the tests in tiers side by side (tests/tiers.txt) and exits non-zero when any failed.
# Arguments go to one ctest run instead of the tiers (e.g. -L unit, -R docker.broker).
# To fit CI's time (45 minutes), work that needs no engine overlaps work that waits on one: the
# images build while the project compiles; the tiers (unit, docker, podman, agents, ...) run side
# by side, each tier's tests one after another; the sanitizer and fuzz trees compile and run at the
# lowest CPU and I/O priority meanwhile. At the end a table gives each stage's and tier's time
# against its budget, and the last line counts every test: "tests: N passed, N failed, N skipped".
# Reads: CI (under CI=true a missing engine fails instead of skipping the engine steps),
#        SANDSHIM_TEST_TIMEOUT (default per-test timeout in seconds, 900), and what the install/ scripts read.
#        SANDSHIM_TEST_SANITIZE=0 / SANDSHIM_TEST_FUZZ=0 skip the sanitizer / fuzz stage;
#        SANDSHIM_FUZZ_SECONDS (default 60) is how long each fuzz target runs.
set -euo pipefail

SANDSHIM_PREFIX=sandshim-test
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/engine.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"
# shellcheck source-path=SCRIPTDIR source=lib/broker.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/broker.sh"

readonly k_build_dir=build
# What users get (install/setup.sh builds it too); the sanitizer tree is Debug and the fuzz tree
# RelWithDebInfo, so CI compiles each build type once.
readonly k_build_type=Release

# An engine that cannot be had fails under CI; elsewhere the docker-labelled tests skip themselves.
prepare_engine() {
    on_exit engine_stop_if_started
    if engine_ensure_running; then
        return 0
    fi
    [[ ${CI:-} != true ]] || die "no Docker engine under CI=true: integration tests cannot be skipped in CI"
    warn "no Docker engine: skipping the images; tests labelled docker will skip (CI=true would fail)"
    return 1
}

# The integration suites also run on podman (label podman); CI must have it working.
prepare_podman() {
    podman_ensure_ready && return 0
    [[ ${CI:-} != true ]] || die "podman is not usable under CI=true: the podman-labelled tests cannot be skipped in CI"
    warn "podman is not usable: tests labelled podman will skip (CI=true would fail)"
}

# A compiler cache where the machine has one (a developer's rebuilds); a fresh CI machine has none.
cache_launcher_args() {
    command -v ccache >/dev/null 2>&1 && printf '%s\n' -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
    return 0
}

build() {
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    say "configuring $k_build_dir/ ($k_build_type)"
    cmake -S . -B "$k_build_dir" -DCMAKE_BUILD_TYPE="$k_build_type" "${launcher[@]}" >&2 ||
        die "cmake configure failed (see above)"
    say "building with $(nproc) jobs"
    cmake --build "$k_build_dir" -j"$(nproc)" >&2 || die "build failed (see above)"
}

readonly k_sanitize_dir=build-sanitize k_fuzz_dir=build-fuzz
readonly k_log_dir=build-logs
readonly k_tiers_file=tests/tiers.txt
readonly k_total_budget_s=2700 # CI's budget is 45 minutes, well inside its 90-minute limit
readonly k_suite_share_s=${SANDSHIM_SUITE_SHARE_S:-300} # one suite past this is named in the table

# The closing table: one row per stage or tier, "name|seconds|budget|status|detail".
g_rows=()
add_row() { g_rows+=("$1|$2|$3|$4|${5:-}"); }

# Runs one stage in the foreground and adds its row; returns the stage's status.
timed_stage() { # NAME BUDGET_S COMMAND...
    local name=$1 budget=$2 started=$SECONDS rc=0
    shift 2
    "$@" || rc=$?
    add_row "$name" $((SECONDS - started)) "$budget" "$( ((rc == 0)) && echo ok || echo "FAILED ($rc)")"
    return "$rc"
}

# Background steps still running when the script exits early are stopped with it.
declare -A g_background_pids=()
kill_tree() {
    local child
    for child in $(pgrep -P "$1"); do
        kill_tree "$child"
    done
    kill -- "$1" 2>/dev/null
}
stop_background() {
    local pid
    for pid in "${!g_background_pids[@]}"; do
        kill_tree "$pid"
    done
}

# Runs a command (or a function of this script) in the background, its output in LOG, and sets
# g_last_pid. With LOW=1 it runs at nice 19 and in the idle I/O class, so that it only takes CPU and
# disk time the tests leave unused.
start_in_background() {
    local log=$1
    shift
    mkdir -p "$k_log_dir"
    # Registered on first use, so that it runs before the engine's own exit hook stops the engine.
    ((${#g_background_pids[@]})) || on_exit stop_background
    (
        if [[ ${LOW:-0} == 1 ]]; then
            renice -n 19 -p "$BASHPID" >/dev/null
            # The idle class exists only under the CFQ/BFQ schedulers; elsewhere the nice level suffices.
            ionice -c3 -p "$BASHPID" 2>/dev/null || true
        fi
        "$@"
    ) >"$log" 2>&1 &
    g_last_pid=$!
    g_background_pids[$g_last_pid]=1
}

# Waits for a background step; on failure shows the end of its log. Returns the step's status.
finish_background() {
    local pid=$1 log=$2 what=$3 rc=0
    wait "$pid" || rc=$?
    unset "g_background_pids[$pid]"
    if ((rc != 0)); then
        say "$what failed (exit $rc); the end of $log:"
        tail -n 60 "$log" >&2
    fi
    return "$rc"
}

# One tier's ctest: its tests one after another (a test with no TIMEOUT of its own gets the
# default), a JUnit report beside its log for the closing table.
tier_ctest() { # NAME TREE JOBS CTEST-ARGS...
    local name=$1 tree=$2 jobs=$3
    shift 3
    ctest --test-dir "$tree" --output-on-failure -j"$jobs" --no-tests=error \
        --timeout "${SANDSHIM_TEST_TIMEOUT:-900}" --output-junit "$PWD/$k_log_dir/tier-$name.xml" "$@"
}

# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer (GCC), in a tree of
# their own, built as Debug: the main tree is Release and the fuzz tree RelWithDebInfo, so every
# build type compiles in CI, once.
sanitizer_tier() {
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    cmake -S . -B "$k_sanitize_dir" -DCMAKE_BUILD_TYPE=Debug -DSANDSHIM_SANITIZE=ON "${launcher[@]}" &&
        cmake --build "$k_sanitize_dir" -j"$(nproc)" --target sandshim_unit_tests &&
        tier_ctest sanitizer "$k_sanitize_dir" "$(nproc)" -L unit
}

# Every libFuzzer target (tests/fuzz, clang), run SANDSHIM_FUZZ_SECONDS each from its seeds, one
# per CPU: each is single-threaded and runs for a fixed wall time.
fuzz_tier() {
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    cmake -S . -B "$k_fuzz_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANDSHIM_FUZZ=ON "${launcher[@]}" \
        -DCMAKE_CXX_COMPILER=clang++ -DSANDSHIM_FUZZ_SECONDS="${SANDSHIM_FUZZ_SECONDS:-60}" &&
        cmake --build "$k_fuzz_dir" -j"$(nproc)" --target sandshim_fuzz_targets &&
        tier_ctest fuzz "$k_fuzz_dir" "$(nproc)" -L fuzz
}

# The tiers of tests/tiers.txt as "name budget" lines, unit first.
tier_table() {
    echo "unit 300"
    awk '/^[a-z]/ { print $1, $2 }' "$k_tiers_file"
}

declare -A g_tier_pid=() g_tier_started=() g_tier_budget=()

# Starts one tier in the background (LOW=1 for the ones that only use idle CPU).
start_tier() { # NAME BUDGET COMMAND...
    local name=$1 budget=$2
    shift 2
    start_in_background "$k_log_dir/tier-$name.log" "$@"
    g_tier_pid[$name]=$g_last_pid
    g_tier_started[$name]=$SECONDS
    g_tier_budget[$name]=$budget
}

start_test_tiers() { # [CTEST-ARGS...]: with arguments, one tier `selected` runs exactly them
    local name budget
    if (($# > 0)); then
        start_tier selected 0 tier_ctest selected "$k_build_dir" 1 "$@"
    else
        while read -r name budget; do
            if [[ $name == unit ]]; then
                start_tier unit "$budget" tier_ctest unit "$k_build_dir" "$(nproc)" -L unit
            else
                start_tier "$name" "$budget" tier_ctest "$name" "$k_build_dir" 1 -L "tier-$name"
            fi
        done < <(tier_table)
    fi
    if [[ ${SANDSHIM_TEST_SANITIZE:-1} != 0 ]]; then
        LOW=1 start_tier sanitizer 0 sanitizer_tier
    fi
    if [[ ${SANDSHIM_TEST_FUZZ:-1} != 0 ]]; then
        LOW=1 start_tier fuzz 0 fuzz_tier
    fi
    say "tiers running side by side: ${!g_tier_pid[*]} (logs: $k_log_dir/tier-NAME.log)"
}

# Waits for every tier; prints each one's log as it ends (whole when it failed, its result lines
# when it passed) and adds its row. Returns 1 when any tier failed.
await_tiers() {
    local failed=0 pid name rc log elapsed
    while ((${#g_tier_pid[@]} > 0)); do
        rc=0
        wait -n -p pid "${g_tier_pid[@]}" || rc=$?
        for name in "${!g_tier_pid[@]}"; do
            [[ ${g_tier_pid[$name]} == "$pid" ]] && break
        done
        unset "g_tier_pid[$name]" "g_background_pids[$pid]"
        elapsed=$((SECONDS - g_tier_started[$name]))
        log=$k_log_dir/tier-$name.log
        if ((rc == 0)); then
            say "tier $name passed in ${elapsed}s"
            grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|Total Test time' "$log" >&2 || true
        else
            failed=1
            say "tier $name FAILED (exit $rc) after ${elapsed}s; its log ($log):"
            cat "$log" >&2
        fi
        add_row "tier $name" "$elapsed" "${g_tier_budget[$name]}" \
            "$( ((rc == 0)) && echo ok || echo "FAILED ($rc)")" "$(tier_detail "$name")"
    done
    return "$failed"
}

# A tier's counts and its slowest test, from its JUnit report; a suite past its share is named.
tier_detail() { # NAME
    local report=$k_log_dir/tier-$1.xml
    [[ -s $report ]] || { echo "no report (build failed?)"; return 0; }
    python3 - "$report" "$k_suite_share_s" <<'PY'
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot()
share = float(sys.argv[2])
cases = [(float(c.get("time") or 0), c.get("name")) for c in suite.iter("testcase")]
n = lambda key: int(suite.get(key) or 0)
skipped = n("skipped") + n("disabled")
parts = ["%d passed, %d failed, %d skipped" % (n("tests") - n("failures") - skipped, n("failures"), skipped)]
if cases:
    slowest = max(cases)
    parts.append("slowest %s %.0fs" % (slowest[1], slowest[0]))
over = ["%s %.0fs" % (name, t) for t, name in sorted(cases, reverse=True) if t > share]
if over:
    parts.append("PAST ITS SHARE (%.0fs): %s" % (share, ", ".join(over)))
print("; ".join(parts))
PY
}

# Every test counted over all tiers' reports; the last line CI reads.
print_totals() {
    python3 - "$k_log_dir" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
total = failed = skipped = 0
for report in glob.glob(sys.argv[1] + "/tier-*.xml"):
    suite = ET.parse(report).getroot()
    n = lambda key: int(suite.get(key) or 0)
    total += n("tests")
    failed += n("failures")
    skipped += n("skipped") + n("disabled")
print("tests: %d passed, %d failed, %d skipped" % (total - failed - skipped, failed, skipped))
PY
}

print_table() {
    local row name seconds budget status detail mark
    printf '\n%-18s %7s %7s  %-12s %s\n' "stage or tier" "seconds" "budget" "status" "detail" >&2
    for row in "${g_rows[@]}"; do
        IFS='|' read -r name seconds budget status detail <<<"$row"
        mark=""
        ((budget > 0 && seconds > budget)) && mark=" OVER BUDGET"
        printf '%-18s %7s %7s  %-12s %s\n' "$name" "$seconds" "$( ((budget > 0)) && echo "$budget" || echo -)" \
            "$status$mark" "$detail" >&2
    done
}

main() {
    local started=$SECONDS rc=0
    cd "$(repo_root)"
    rm -f "$k_log_dir"/tier-*.xml
    timed_stage deps 420 bash install/deps.sh --with-podman --with-gvisor
    local images_pid="" images_started=$SECONDS
    if prepare_engine; then
        prepare_podman
        # The images (also copied into podman's store) build while the project compiles.
        say "building the images in the background (log: $k_log_dir/images.log)"
        start_in_background "$k_log_dir/images.log" bash install/images.sh
        images_pid=$g_last_pid
        # The broker's system user and directories; suite_broker starts (and stops) its own broker
        # on a private socket, so no other suite's runs go through a broker.
        broker_ensure_user || die "cannot create the broker's system user (see above)"
    fi
    timed_stage build 900 build || die "the build failed (see above)"
    if [[ -n $images_pid ]]; then
        finish_background "$images_pid" "$k_log_dir/images.log" "building the images" ||
            die "the images could not be built (see above)"
        add_row "images (beside the build)" $((SECONDS - images_started)) 600 ok
        cat "$k_log_dir/images.log" >&2
    fi
    start_test_tiers "$@"
    await_tiers || rc=1
    add_row total $((SECONDS - started)) "$k_total_budget_s" "$( ((rc == 0)) && echo ok || echo FAILED)"
    print_table
    print_totals
    return "$rc"
}

main "$@"
