#!/usr/bin/env bash
# The engine library against the real engine's API (every verb, the event stream, the hijacked
# attach stream with its multiplexed frames), and what the shim does with it: a remote
# engine.endpoint is refused before anything is mounted. podman is driven through its API
# service (`podman system service` on a socket of the suite's own).
# sandshim-test-engines: docker podman
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

unit_tests=${SANDSHIM_UNIT_TESTS:-$(dirname "$SANDSHIM_BIN")/tests/sandshim_unit_tests}
[[ -x $unit_tests ]] || die "no unit-test binary at '$unit_tests'; build sandshim_unit_tests or set SANDSHIM_UNIT_TESTS"

# The engine's API socket: docker's own, or a podman service the suite starts and stops.
api_socket=/var/run/docker.sock
if [[ $ENGINE == podman ]]; then
    api_socket=$T/podman.sock
    podman system service --time=0 "unix://$api_socket" >"$T/podman-service.log" 2>&1 &
    BG_PIDS+=($!)
    for _ in $(seq 100); do
        [[ -S $api_socket ]] && break
        sleep 0.1
    done
    [[ -S $api_socket ]] || die "podman system service did not create $api_socket ($(cat "$T/podman-service.log"))"
fi
prefix=sandshim-engine-api-$$-
EXTRA_CONTAINERS+=("${prefix}attach" "${prefix}kill")

live() { # TAGS
    SANDSHIM_TEST_ENGINE_SOCKET=$api_socket SANDSHIM_TEST_IMAGE=sandshim/sh:bookworm \
        SANDSHIM_TEST_CONTAINER_PREFIX=$prefix "$unit_tests" "$@"
}

check "ping, version, info and image inspection answer through the real $ENGINE API"
expect_exit 0 live "[.engine_live]~[.engine_live_run]"

check "create, attach, start, wait, kill, remove and the event stream work through the real $ENGINE API"
expect_exit 0 live "[.engine_live_run]"

check "a remote engine.endpoint that cannot ship the workspace is refused with one line before anything is mounted"
# docker: tcp:// without TLS (tcp:// with engine.tls_cert_path and ssh:// ship it: suite_remote,
# suite_remote_ssh); podman: its remote client, which would bind-mount this machine's paths.
if [[ $ENGINE == docker ]]; then
    endpoint=tcp://127.0.0.1:9 status=engine_error # the engine's configuration, refused at its lookup
    why="has no TLS: set engine.tls_cert_path (an unauthenticated TCP engine is root for anyone who reaches it)"
else
    endpoint=ssh://sandshim-nobody@127.0.0.1 status=refused
    why="is not on this machine and only docker's Engine API (tcp:// with engine.tls_cert_path, or ssh://) ships the workspace there (podman's remote client would bind-mount this machine's paths, which name that machine's files); use docker there, run sandshim on the engine's machine, or set engine.endpoint to a local engine (empty, or unix:///path)"
fi
write_user_config <<<"endpoint = $endpoint"
expect_exit 125 sandshim run -- sh -c 'exit 42'
expect_file_is "$ERR" "sandshim: engine.endpoint \"$endpoint\" $why; nothing ran"
expect_run last "$status" 125

check "control: a local unix:// endpoint runs"
write_user_config <<<"endpoint = unix://$api_socket"
if skip_check_on podman "podman's client with a unix:// endpoint is its remote client, which this suite does not cover"; then
    :
else
    expect_exit 42 sandshim run -- sh -c 'exit 42'
    expect_run last error 42
fi
reset_user_config

suite_done
