#!/usr/bin/env bash
# The README's test command, and what CI runs: installs what is missing, makes sure a Docker engine
# answers (stopping it at exit only if this script started it) and podman works, builds the images
# (copied into podman's store too) and the project,
# then runs the tests and exits non-zero when any failed. Arguments select tests (they go to ctest:
# e.g. -L unit, -R 'docker\.broker$').
# To fit CI's time (45 minutes), work that needs no engine overlaps work that waits on one: the
# images build while the project compiles; one `ctest -j3` runs the tiers of tests/tiers.txt side
# by side, each tier's tests one at a time (a resource lock per tier), and a suite marked
# `sandshim-test-alone` with nothing beside it; one sanitizer tree (clang: the unit tests under ASan
# and UBSan, then the fuzz targets) and the product in the Debug build type compile and run at the
# lowest CPU and I/O priority meanwhile. At the end a table gives each stage's and tier's time
# against its budget, and the last line counts every test: "tests: N passed, N failed, N skipped".
# Reads: CI (under CI=true a missing engine fails instead of skipping the engine steps),
#        SANDSHIM_TEST_TIMEOUT (default per-test timeout in seconds, 900), and what the install/ scripts read.
#        SANDSHIM_TEST_JOBS (tests at once, default 3),
#        SANDSHIM_TEST_SANITIZE=0 skips the sanitizer tree, SANDSHIM_TEST_FUZZ=0 only its fuzz targets;
#        SANDSHIM_TEST_DEBUG=1 also compiles the product as Debug beside the tests;
#        SANDSHIM_FUZZ_SECONDS (default 20) is how long each fuzz target runs.
set -euo pipefail

SANDSHIM_PREFIX=sandshim-test
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/engine.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"
# shellcheck source-path=SCRIPTDIR source=lib/broker.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/broker.sh"

readonly k_build_dir=build
# What users get (install/setup.sh builds it too); the sanitizer tree is RelWithDebInfo (clang),
# the debug tier (SANDSHIM_TEST_DEBUG=1) Debug.
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

readonly k_fuzz_dir=build-fuzz
readonly k_debug_dir=build-debug
readonly k_log_dir=build-logs
readonly k_tiers_file=tests/tiers.txt
readonly k_total_budget_s=2700 # CI's budget is 45 minutes, well inside its 90-minute limit
readonly k_suite_share_s=${SANDSHIM_SUITE_SHARE_S:-300} # one suite past this is named in the table
# Tests at once: the tiers side by side. On 2 cores four engine-heavy suites at once overloaded
# dockerd until 30 s deadlines passed (measured); three keep every tier moving.
readonly k_test_jobs=${SANDSHIM_TEST_JOBS:-3}

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

# One ctest run: its tests at most JOBS at a time (a test with no TIMEOUT of its own gets the
# default), a JUnit report build-logs/tier-NAME.xml for the closing table.
tier_ctest() { # NAME TREE JOBS CTEST-ARGS...
    local name=$1 tree=$2 jobs=$3
    shift 3
    ctest --test-dir "$tree" --output-on-failure -j"$jobs" --no-tests=error \
        --timeout "${SANDSHIM_TEST_TIMEOUT:-900}" --output-junit "$PWD/$k_log_dir/tier-$name.xml" "$@"
}

# One sanitizer tree (clang, RelWithDebInfo; every library under ASan, UBSan and libFuzzer's
# coverage): the unit tests again under the sanitizers, then every libFuzzer target of tests/fuzz
# for SANDSHIM_FUZZ_SECONDS each from its seeds, one per CPU (each is single-threaded and runs for a
# fixed wall time). One tree, not a GCC sanitizer tree beside a clang fuzz tree: on 2 cores the
# third full build was what kept CI past 45 minutes.
sanitizer_tier() {
    local launcher targets=(sandshim_unit_tests)
    mapfile -t launcher < <(cache_launcher_args)
    [[ ${SANDSHIM_TEST_FUZZ:-1} == 0 ]] || targets+=(sandshim_fuzz_targets)
    cmake -S . -B "$k_fuzz_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANDSHIM_FUZZ=ON "${launcher[@]}" \
        -DCMAKE_CXX_COMPILER=clang++ -DSANDSHIM_FUZZ_SECONDS="${SANDSHIM_FUZZ_SECONDS:-20}" &&
        cmake --build "$k_fuzz_dir" -j"$(nproc)" --target "${targets[@]}" || return 1
    local rc=0
    tier_ctest sanitizer "$k_fuzz_dir" "$(nproc)" -L unit || rc=1
    if [[ ${SANDSHIM_TEST_FUZZ:-1} != 0 ]]; then
        tier_ctest fuzz "$k_fuzz_dir" "$(nproc)" -L fuzz || rc=1
    fi
    return "$rc"
}

# The product in the Debug build type (no tests, warnings are errors as in every tree): each build
# type compiles once, Release in the main tree, RelWithDebInfo in the sanitizer tree.
debug_tier() {
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    cmake -S . -B "$k_debug_dir" -DCMAKE_BUILD_TYPE=Debug -DSANDSHIM_BUILD_TESTS=OFF "${launcher[@]}" &&
        cmake --build "$k_debug_dir" -j"$(nproc)" && "$k_debug_dir/sandshim" --version
}

declare -A g_tier_pid=() g_tier_started=()

# Starts the sanitizer tree (and, with SANDSHIM_TEST_DEBUG=1, the Debug tree) at the lowest
# priority, beside the tests (SANDSHIM_TEST_SANITIZE=0 skips the sanitizer tree); their rows come
# from await_background_tiers.
start_background_tiers() {
    # Opt-in: on 2 cores its full build took the CPU the sanitizer tree needed beside the tests,
    # and kept CI past 45 minutes.
    if [[ ${SANDSHIM_TEST_DEBUG:-0} == 1 ]]; then
        LOW=1 start_in_background "$k_log_dir/tier-debug.log" debug_tier
        g_tier_pid[debug]=$g_last_pid
        g_tier_started[debug]=$SECONDS
        say "debug tier (the product in the Debug build type) building at the lowest priority (log: $k_log_dir/tier-debug.log)"
    fi
    if [[ ${SANDSHIM_TEST_SANITIZE:-1} == 0 ]]; then
        say "sanitizer tier skipped (SANDSHIM_TEST_SANITIZE=0)"
        return 0
    fi
    LOW=1 start_in_background "$k_log_dir/tier-sanitizer.log" sanitizer_tier
    g_tier_pid[sanitizer]=$g_last_pid
    g_tier_started[sanitizer]=$SECONDS
    say "sanitizer tier (unit tests under ASan and UBSan, then the fuzz targets) building at the lowest priority (log: $k_log_dir/tier-sanitizer.log)"
}

# The closing table's detail of a background tier.
tier_detail() { # NAME
    if [[ $1 == sanitizer ]]; then
        echo "unit: $(report_counts "$k_log_dir/tier-sanitizer.xml"); fuzz: $(report_counts "$k_log_dir/tier-fuzz.xml")"
    else
        echo "the product compiles as Debug: $(tail -n 1 "$k_log_dir/tier-$1.log")"
    fi
}

# Waits for the background tiers; prints each one's log (whole when it failed, its result lines
# when it passed) and adds its row. Returns 1 when any failed.
await_background_tiers() {
    local failed=0 name rc log
    for name in "${!g_tier_pid[@]}"; do
        rc=0
        wait "${g_tier_pid[$name]}" || rc=$?
        unset "g_background_pids[${g_tier_pid[$name]}]"
        log=$k_log_dir/tier-$name.log
        if ((rc == 0)); then
            say "$name tier passed"
            grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|Total Test time' "$log" | tail -n 20 >&2 || true
        else
            failed=1
            say "$name tier FAILED (exit $rc); its log ($log):"
            cat "$log" >&2
        fi
        add_row "$name (build + run)" $((SECONDS - g_tier_started[$name])) 0 \
            "$( ((rc == 0)) && echo ok || echo "FAILED ($rc)")" "$(tier_detail "$name")"
    done
    return "$failed"
}

# "N passed, N failed, N skipped" of one JUnit report.
report_counts() { # REPORT
    [[ -s $1 ]] || { echo "no report (its build failed?)"; return 0; }
    python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot()
n = lambda key: int(suite.get(key) or 0)
skipped = n("skipped") + n("disabled")
print("%d passed, %d failed, %d skipped" % (n("tests") - n("failures") - skipped, n("failures"), skipped))
PY
}

# One row per tier of the main run: its tests' times added up (the tier's time were it alone),
# against its budget; its slowest test; any suite past its share is named.
add_tier_rows() {
    local report=$k_log_dir/tier-main.xml tests=$k_log_dir/tests.json line
    [[ -s $report ]] || return 0
    ctest --test-dir "$k_build_dir" --show-only=json-v1 >"$tests" 2>/dev/null || return 0
    while IFS= read -r line; do
        g_rows+=("$line")
    done < <(python3 - "$report" "$tests" "$k_tiers_file" "$k_suite_share_s" <<'PY'
import json, sys, xml.etree.ElementTree as ET
report, tests, tiers_file, share = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
budgets = {"unit": 300}
for row in open(tiers_file):
    if row[:1].isalpha():
        name, budget = row.split()[:2]
        budgets[name] = int(budget)
tier_of = {}
for test in json.load(open(tests)).get("tests", []):
    for prop in test.get("properties", []):
        if prop.get("name") == "LABELS":
            labels = prop.get("value") or []
            tiers = [l[5:] for l in labels if l.startswith("tier-")]
            tier_of[test["name"]] = tiers[0] if tiers else ("unit" if "unit" in labels else "other")
cases = {}
for case in ET.parse(report).getroot().iter("testcase"):
    tier = tier_of.get(case.get("name"), "other")
    cases.setdefault(tier, []).append((float(case.get("time") or 0), case.get("name"), case.get("status")))
for tier in sorted(cases, key=lambda t: -sum(c[0] for c in cases[t])):
    runs = cases[tier]
    total = sum(c[0] for c in runs)
    failed = sum(1 for c in runs if c[2] == "fail")
    skipped = sum(1 for c in runs if c[2] in ("notrun", "disabled"))
    detail = "%d passed, %d failed, %d skipped" % (len(runs) - failed - skipped, failed, skipped)
    slowest = max(runs)
    detail += "; slowest %s %.0fs" % (slowest[1], slowest[0])
    over = ["%s %.0fs" % (n, t) for t, n, _ in sorted(runs, reverse=True) if t > share]
    if over:
        detail += "; PAST ITS SHARE (%.0fs): %s" % (share, ", ".join(over))
    status = "ok" if failed == 0 else "FAILED"
    print("tier %s (sum)|%.0f|%d|%s|%s" % (tier, total, budgets.get(tier, 0), status, detail))
PY
    )
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
    printf '\n%-26s %7s %7s  %-12s %s\n' "stage or tier" "seconds" "budget" "status" "detail" >&2
    for row in "${g_rows[@]}"; do
        IFS='|' read -r name seconds budget status detail <<<"$row"
        mark=""
        ((budget > 0 && seconds > budget)) && mark=" OVER BUDGET"
        printf '%-26s %7s %7s  %-12s %s\n' "$name" "$seconds" "$( ((budget > 0)) && echo "$budget" || echo -)" \
            "$status$mark" "$detail" >&2
    done
}

# An installed sandshim's system file applies to every run of every suite, and one that requires
# its broker sends every client there, past the suites' private brokers: the results would be
# that installation's, so the suites refuse to start.
refuse_installed_system_file() {
    [[ -e /etc/sandshim/config ]] || return 0
    die "/etc/sandshim/config (an installed sandshim) would apply to every test run and send clients to its broker; run install/uninstall.sh first (install/setup.sh puts it back)"
}

main() {
    local started=$SECONDS rc=0
    cd "$(repo_root)"
    refuse_installed_system_file
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
    start_background_tiers
    # Every test of the main tree in one ctest: tiers side by side (each tier's tests one at a time,
    # tests/tiers.txt), a suite marked alone with nothing beside it; arguments select tests instead.
    say "running the tests: ctest -j$k_test_jobs $* (each tier's tests one at a time; log below)"
    timed_stage "tests (ctest -j$k_test_jobs)" 1500 tier_ctest main "$k_build_dir" "$k_test_jobs" "$@" || rc=1
    add_tier_rows
    await_background_tiers || rc=1
    add_row total $((SECONDS - started)) "$k_total_budget_s" "$( ((rc == 0)) && echo ok || echo FAILED)"
    print_table
    print_totals
    return "$rc"
}

main "$@"
