#!/usr/bin/env bash
# The README's test command, and what CI runs: installs what is missing, makes sure a Docker engine
# answers (stopping it at exit only if this script started it) and podman works, builds the images
# (copied into podman's store too) and the project,
# then runs ctest and exits with ctest's code. Arguments go to ctest (e.g. -L unit).
# To fit CI's time, work that needs no engine overlaps work that waits on one: the images build while
# the project compiles, and the sanitizer and fuzz trees compile at the lowest CPU and I/O priority
# while the integration tests run (a test's processes and containers always win the CPU).
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
    say "configuring $k_build_dir/ (RelWithDebInfo)"
    cmake -S . -B "$k_build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >&2 ||
        die "cmake configure failed (see above)"
    say "building with $(nproc) jobs"
    cmake --build "$k_build_dir" -j"$(nproc)" >&2 || die "build failed (see above)"
}

# Integration tests share one engine, so -j1; a test with no TIMEOUT of its own gets a default one.
run_ctest() {
    local rc=0
    say "running ctest $*"
    ctest --test-dir "$k_build_dir" --output-on-failure -j1 --no-tests=error \
        --timeout "${SANDSHIM_TEST_TIMEOUT:-900}" "$@" || rc=$?
    if ((rc == 0)); then
        say "all selected tests passed"
    else
        say "ctest failed with exit code $rc"
    fi
    return "$rc"
}

readonly k_sanitize_dir=build-sanitize k_fuzz_dir=build-fuzz
readonly k_log_dir=build-logs

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

# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer (GCC), in a tree of
# their own; the arguments of this script select tests of the main tree only.
sanitizer_build() {
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    cmake -S . -B "$k_sanitize_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANDSHIM_SANITIZE=ON "${launcher[@]}" &&
        cmake --build "$k_sanitize_dir" -j"$(nproc)" --target sandshim_unit_tests
}

# Every libFuzzer target (tests/fuzz, clang), built to run SANDSHIM_FUZZ_SECONDS each from its seeds.
fuzz_build() {
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    cmake -S . -B "$k_fuzz_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANDSHIM_FUZZ=ON "${launcher[@]}" \
        -DCMAKE_CXX_COMPILER=clang++ -DSANDSHIM_FUZZ_SECONDS="${SANDSHIM_FUZZ_SECONDS:-60}" &&
        cmake --build "$k_fuzz_dir" -j"$(nproc)" --target sandshim_fuzz_targets
}

g_sanitize_pid="" g_fuzz_pid="" g_last_pid=""

# Starts the sanitizer and fuzz builds beside the integration tests (each can be switched off).
start_extra_builds() {
    if [[ ${SANDSHIM_TEST_SANITIZE:-1} != 0 ]]; then
        say "sanitizer tree $k_sanitize_dir/ building in the background (log: $k_log_dir/sanitize-build.log)"
        LOW=1 start_in_background "$k_log_dir/sanitize-build.log" sanitizer_build
        g_sanitize_pid=$g_last_pid
    fi
    if [[ ${SANDSHIM_TEST_FUZZ:-1} != 0 ]]; then
        say "fuzz tree $k_fuzz_dir/ building in the background (log: $k_log_dir/fuzz-build.log)"
        LOW=1 start_in_background "$k_log_dir/fuzz-build.log" fuzz_build
        g_fuzz_pid=$g_last_pid
    fi
}

sanitizer_stage() {
    if [[ -z $g_sanitize_pid ]]; then
        say "sanitizer stage skipped (SANDSHIM_TEST_SANITIZE=0)"
        return 0
    fi
    say "sanitizer stage: unit tests under ASan and UBSan in $k_sanitize_dir/"
    if finish_background "$g_sanitize_pid" "$k_log_dir/sanitize-build.log" "the sanitizer build" &&
        ctest --test-dir "$k_sanitize_dir" --output-on-failure -j"$(nproc)" --no-tests=error -L unit; then
        return 0
    fi
    say "sanitizer stage failed (see above)"
    return 1
}

# The fuzz targets run one per CPU: each is single-threaded and runs for a fixed wall time.
fuzz_stage() {
    if [[ -z $g_fuzz_pid ]]; then
        say "fuzz stage skipped (SANDSHIM_TEST_FUZZ=0)"
        return 0
    fi
    say "fuzz stage: ${SANDSHIM_FUZZ_SECONDS:-60}s per target in $k_fuzz_dir/"
    if finish_background "$g_fuzz_pid" "$k_log_dir/fuzz-build.log" "the fuzz build" &&
        ctest --test-dir "$k_fuzz_dir" --output-on-failure -j"$(nproc)" --no-tests=error -L fuzz; then
        return 0
    fi
    say "fuzz stage failed (see above)"
    return 1
}

main() {
    local started=$SECONDS rc=0
    cd "$(repo_root)"
    bash install/deps.sh --with-podman
    local images_pid=""
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
    build
    if [[ -n $images_pid ]]; then
        finish_background "$images_pid" "$k_log_dir/images.log" "building the images" ||
            die "the images could not be built (see above)"
        cat "$k_log_dir/images.log" >&2
    fi
    start_extra_builds
    run_ctest "$@" || rc=$?
    sanitizer_stage || rc=$((rc ? rc : 1))
    fuzz_stage || rc=$((rc ? rc : 1))
    say "done in $((SECONDS - started))s"
    return "$rc"
}

main "$@"
