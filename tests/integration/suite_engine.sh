#!/usr/bin/env bash
# The engine: the caller's docker variables and PATH never steer it; an engine that is down, not
# installed, or lacks the image gives 125 with one clear line, audit `engine_error`, and the
# command never runs on the host (it would leave a marker in the workspace).
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$WS/rw"
chmod 777 "$WS/rw"
marker=$WS/rw/marker
# The command of every check: leaves a marker where it runs, exits 42.
would_mark=(sh -c 'touch rw/marker; exit 42')

expect_nothing_ran() {
    [[ ! -e $marker ]] || fail "the command ran: $marker exists"
}

check "control: the marker command runs in the sandbox and leaves its marker"
expect_exit 42 sandshim run --workspace rw -- "${would_mark[@]}"
[[ -e $marker ]] || fail "control: no marker after a run that should have made one"
rm -f "$marker"

if [[ $ENGINE == docker ]]; then
    check "the caller's DOCKER_HOST, DOCKER_CONTEXT, DOCKER_CONFIG and PATH do not steer the engine"
    mkdir -p "$T/evil-docker-config" "$T/evil-bin"
    cat >"$T/evil-docker-config/config.json" <<'EOF'
{"proxies": {"default": {"httpProxy": "http://127.0.0.1:9", "noProxy": "sandshim-canary"}}}
EOF
    printf '#!/bin/sh\ntouch %q\nexit 1\n' "$T/evil-docker-ran" >"$T/evil-bin/docker"
    chmod 755 "$T/evil-bin/docker"
    # Controls: each variable does steer a docker client that honours it (all traffic to loopback).
    DOCKER_CONFIG=$T/evil-docker-config "$DOCKER" run --rm --network none --pull=never --log-driver=none \
        sandshim/sh:bookworm env >"$T/proxied.env"
    expect_contains "HTTP_PROXY=http://127.0.0.1:9" "$T/proxied.env"
    ! DOCKER_HOST=tcp://127.0.0.1:9 timeout 20 "$DOCKER" version >/dev/null 2>&1 ||
        fail "control: docker with DOCKER_HOST=tcp://127.0.0.1:9 still reached an engine"
    ! DOCKER_CONTEXT=sandshim-no-such-context timeout 20 "$DOCKER" version >/dev/null 2>&1 ||
        fail "control: docker with an unknown DOCKER_CONTEXT still reached an engine"
    expect_equal "$T/evil-bin/docker" "$(PATH=$T/evil-bin:$PATH command -v docker)" "docker on the caller's PATH"
    DOCKER_HOST=tcp://127.0.0.1:9 DOCKER_CONTEXT=sandshim-no-such-context DOCKER_CONFIG=$T/evil-docker-config \
        PATH=$T/evil-bin:$PATH expect_exit 42 sandshim run -- sh -c 'env; exit 42'
    expect_not_contains PROXY "$OUT"
    expect_not_contains sandshim-canary "$OUT"
    [[ ! -e $T/evil-docker-ran ]] || fail "sandshim ran the docker it found on the caller's PATH"
    expect_run last error 42
else
    check "the caller's CONTAINER_HOST, CONTAINERS_CONF and PATH do not steer podman"
    mkdir -p "$T/evil-bin"
    printf '[containers]\nenv = ["SANDSHIM_CANARY=injected"]\n' >"$T/evil-containers.conf"
    printf '#!/bin/sh\ntouch %q\nexit 1\n' "$T/evil-podman-ran" >"$T/evil-bin/podman"
    chmod 755 "$T/evil-bin/podman"
    # Controls: each variable does steer a podman client that honours it (all traffic to loopback).
    CONTAINERS_CONF=$T/evil-containers.conf "$ENGINE_CLIENT" run --rm --network none --pull=never \
        --log-driver=none "${PLAIN_RUN_LIMITS[@]}" sandshim/sh:bookworm env >"$T/injected.env"
    expect_contains "SANDSHIM_CANARY=injected" "$T/injected.env"
    ! CONTAINER_HOST=tcp://127.0.0.1:9 timeout 20 "$ENGINE_CLIENT" version >/dev/null 2>&1 ||
        fail "control: podman with CONTAINER_HOST=tcp://127.0.0.1:9 still reached an engine"
    expect_equal "$T/evil-bin/podman" "$(PATH=$T/evil-bin:$PATH command -v podman)" "podman on the caller's PATH"
    CONTAINER_HOST=tcp://127.0.0.1:9 CONTAINERS_CONF=$T/evil-containers.conf \
        PATH=$T/evil-bin:$PATH expect_exit 42 sandshim run -- sh -c 'env; exit 42'
    expect_not_contains SANDSHIM_CANARY "$OUT"
    [[ ! -e $T/evil-podman-ran ]] || fail "sandshim ran the podman it found on the caller's PATH"
    expect_run last error 42
fi

check "engine not installed (engine.search_path = /nonexistent): 125, one clear line, nothing ran"
printf '[engine]\nsearch_path = /nonexistent\n' | write_user_config
expect_exit 125 sandshim run --workspace rw -- "${would_mark[@]}"
expect_file_is "$ERR" "sandshim: container engine \"$ENGINE\" not found (searched /nonexistent); install it (install/deps.sh, or \`apt-get install docker.io\`) or set engine.path; nothing ran"
expect_nothing_ran
expect_run last engine_error 125
reset_user_config

check "missing image: 125, one line naming the image and \`sandshim images build\`, nothing ran"
expect_exit 125 sandshim run --workspace rw --image sandshim/missing:none -- "${would_mark[@]}"
expect_lines 1 "$ERR"
expect_contains "sandshim: the container engine failed (" "$ERR"
expect_contains "image sandshim/missing:none is not present" "$ERR"
expect_contains "\`sandshim images build\`" "$ERR"
expect_contains "nothing ran" "$ERR"
expect_nothing_ran
expect_run last engine_error 125

# Several times: the engine's own error text used to race the shim's single line.
check "engine down (engine.endpoint = unix:///nonexistent.sock): 125, one clear line, audit engine_error, nothing ran"
printf '[engine]\nendpoint = unix:///nonexistent.sock\n' | write_user_config
for _ in 1 2 3 4 5; do
    expect_exit 125 sandshim run --workspace rw -- "${would_mark[@]}"
    if [[ $ENGINE == docker ]]; then
        expect_file_is "$ERR" "sandshim: the container engine failed (Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?); the engine is not running: start it (\`sudo systemctl start docker\`, or install/setup.sh); nothing ran"
    else
        expect_lines 1 "$ERR"
        expect_contains "sandshim: the container engine failed (Cannot connect to Podman." "$ERR"
        expect_contains "the podman service does not answer: start it (\`podman system service\`) or check engine.endpoint; nothing ran" "$ERR"
    fi
    expect_file_is "$OUT" ""
    expect_nothing_ran
    expect_run last engine_error 125
done
reset_user_config

check "missing image under \`sandshim run\`: the fix names the command's key images.sh"
expect_exit 125 sandshim run --image sandshim/missing:none -- sh -c 'exit 42'
expect_contains "set images.sh in the config" "$ERR"

suite_done
