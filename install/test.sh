#!/usr/bin/env bash
# The README's test command, and what CI runs: installs what is missing, makes sure a Docker engine
# answers (stopping it at exit only if this script started it) and podman works, builds the images
# (copied into podman's store too) and the project,
# then runs ctest and exits with ctest's code. Arguments go to ctest (e.g. -L unit).
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

# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer (GCC), in a tree of
# their own; the arguments of this script select tests of the main tree only.
sanitizer_stage() {
    if [[ ${SANDSHIM_TEST_SANITIZE:-1} == 0 ]]; then
        say "sanitizer stage skipped (SANDSHIM_TEST_SANITIZE=0)"
        return 0
    fi
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    say "sanitizer stage: unit tests under ASan and UBSan in $k_sanitize_dir/"
    if cmake -S . -B "$k_sanitize_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANDSHIM_SANITIZE=ON "${launcher[@]}" >&2 &&
        cmake --build "$k_sanitize_dir" -j"$(nproc)" --target sandshim_unit_tests >&2 &&
        ctest --test-dir "$k_sanitize_dir" --output-on-failure -j"$(nproc)" --no-tests=error -L unit; then
        return 0
    fi
    say "sanitizer stage failed (see above)"
    return 1
}

# Every libFuzzer target (tests/fuzz, clang) for SANDSHIM_FUZZ_SECONDS from its seed corpus.
fuzz_stage() {
    if [[ ${SANDSHIM_TEST_FUZZ:-1} == 0 ]]; then
        say "fuzz stage skipped (SANDSHIM_TEST_FUZZ=0)"
        return 0
    fi
    local launcher
    mapfile -t launcher < <(cache_launcher_args)
    say "fuzz stage: ${SANDSHIM_FUZZ_SECONDS:-60}s per target in $k_fuzz_dir/"
    if cmake -S . -B "$k_fuzz_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANDSHIM_FUZZ=ON "${launcher[@]}" \
        -DCMAKE_CXX_COMPILER=clang++ -DSANDSHIM_FUZZ_SECONDS="${SANDSHIM_FUZZ_SECONDS:-60}" >&2 &&
        cmake --build "$k_fuzz_dir" -j"$(nproc)" --target sandshim_fuzz_targets >&2 &&
        ctest --test-dir "$k_fuzz_dir" --output-on-failure -j1 --no-tests=error -L fuzz; then
        return 0
    fi
    say "fuzz stage failed (see above)"
    return 1
}

main() {
    local started=$SECONDS rc=0
    cd "$(repo_root)"
    bash install/deps.sh --with-podman
    if prepare_engine; then
        prepare_podman
        bash install/images.sh # also copies the images into podman's store
        # The broker's system user and directories; suite_broker starts (and stops) its own broker
        # on a private socket, so no other suite's runs go through a broker.
        broker_ensure_user || die "cannot create the broker's system user (see above)"
    fi
    build
    run_ctest "$@" || rc=$?
    sanitizer_stage || rc=$((rc ? rc : 1))
    fuzz_stage || rc=$((rc ? rc : 1))
    say "done in $((SECONDS - started))s"
    return "$rc"
}

main "$@"
