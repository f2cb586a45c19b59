#!/usr/bin/env bash
# A pool of two kinds of engine (engine.endpoints): the local dockerd and podman's API service
# (started here when none answers at root's socket, and stopped only if started here), each entry
# with its own engine= and label=. A run pinned by label to each is created by that engine with
# its own client and dialect: the container shows that engine's marker file from inside, and the
# engine's own event log has it while the other engine's has not; each row's `engine` names
# kind@endpoint. Unpinned runs go to the first engine while both are idle, to the other while the
# first has a run in flight (share of cap). doctor names each entry's kind; engine=lxc and podman
# on tcp:// are refused with one line. About 40 s.
# sandshim-test-engines: podman
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../../install/lib/podman_service.sh
. "$SOURCE_DIR/install/lib/podman_service.sh"

SOCKET=$(podman_service_default_socket) || skip_or_fail "no socket for podman's API service"
trap 'rc=$?; podman_service_stop_if_started; (exit $rc); cleanup' EXIT
podman_service_ensure "$T/podman-service.log" "$SOCKET" || die "podman's API service does not start"
DOCKER_CLIENT=$(command -v docker) || skip_or_fail "no docker client on PATH"
"$DOCKER_CLIENT" image inspect sandshim/sh:bookworm >/dev/null 2>&1 ||
    skip_or_fail "image sandshim/sh:bookworm is missing from docker (install/images.sh)"

DOCKER_END=unix:///var/run/docker.sock
PODMAN_END=unix://$SOCKET
# engine.name is podman here (write_user_config): the docker entry needs its engine=, and the
# podman entry says its own too, so the list reads the same under any engine.name.
mixed_config() { # REQUIRE_LABELS [MAX_RUNS]
    write_user_config <<EOF
endpoints = $DOCKER_END engine=docker label=d
endpoints = $PODMAN_END engine=podman label=p
require_labels = $1
max_runs = ${2:-0}
place_wait = 60s
EOF
}

# Which engine made the container, seen from inside: docker writes /.dockerenv into every
# container's root, podman mounts /run/.containerenv; neither writes the other's.
MARKERS='for f in /.dockerenv /run/.containerenv; do [ -e "$f" ] && echo "$f"; done; true'

# Whether CLIENT's event log has a container named NAME since STAMP (unix seconds). podman writes
# its events after the run has returned (rehearsal 18 read them too early once): asked TRIES
# times, half a second apart (default 10).
engine_saw() { # CLIENT STAMP NAME [TRIES]
    local events i
    for ((i = 0; i < ${4:-10}; i++)); do
        events=$("$1" events --since "$2" --until "$(($(date +%s) + 1))" --filter "container=$3" 2>&1) ||
            fail "$1 events failed: $events"
        [[ $events == *"$3"* ]] && return 0
        sleep 0.5
    done
    return 1
}

check "each run pinned by label goes to its engine, which runs it (its marker inside, its events outside), and its row names it"
for pin in d p; do
    mixed_config "$pin"
    stamp=$(($(date +%s) - 1))
    expect_exit 0 sandshim run -- sh -c "$MARKERS"
    id=$(last_run_id)
    engine=$(audit_field "$id" engine)
    if [[ $pin == d ]]; then
        want=docker@$DOCKER_END ran=$DOCKER_CLIENT other=$ENGINE_CLIENT marker=/.dockerenv
    else
        want=podman@$PODMAN_END ran=$ENGINE_CLIENT other=$DOCKER_CLIENT marker=/run/.containerenv
    fi
    expect_equal "$want" "$engine" "the row's engine of the run pinned to $pin"
    expect_file_is "$OUT" "$marker"
    expect_run "$id" ok 0
    engine_saw "$ran" "$stamp" "sandshim-$id" || miss "$ran's events have no container sandshim-$id"
    ! engine_saw "$other" "$stamp" "sandshim-$id" 1 || miss "$other's events have sandshim-$id too"
    say "the run pinned to $pin ran on $engine"
done

check "each run is built in its own engine's dialect: podman's adds what makes its sandbox docker's (no TERM, no writable tmpfs on /var/tmp)"
# Without podman's dialect (docker's spec sent to podman) podman sets TERM=xterm and mounts a
# writable tmpfs on /var/tmp under --read-only; docker does neither. The caller has no TERM (one
# it has is passed on).
for pin in d p; do
    mixed_config "$pin"
    expect_exit 0 env -u TERM "$SANDSHIM_BIN" run -- sh -c 'echo "TERM=${TERM-unset}"; touch /var/tmp/probe 2>/dev/null && echo writable || echo read-only'
    expect_file_is "$OUT" "TERM=unset
read-only"
done

one_running() {
    (($(audit_cmd sql "SELECT count(*) AS n FROM runs WHERE status = 'running'" --jsonl |
        "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)["n"])') == 1))
}

check "unpinned: the first engine while both are idle; the other while the first has a run in flight"
mixed_config ""
expect_exit 0 sandshim run -- sh -c 'exit 0'
expect_equal "docker@$DOCKER_END" "$(audit_field last engine)" "an unpinned run on idle engines"
"$SANDSHIM_BIN" run -- sh -c 'sleep 8' >/dev/null 2>&1 &
BG_PIDS+=("$!")
wait_until 30 "the held run's row" one_running
expect_exit 0 sandshim run -- sh -c 'exit 0'
expect_equal "podman@$PODMAN_END" "$(audit_field last engine)" "an unpinned run beside a run in flight on docker"
wait "${BG_PIDS[@]}" || miss "the held run on docker did not exit 0"
BG_PIDS=()

check "doctor names each entry's kind"
mixed_config ""
"$SANDSHIM_BIN" doctor >"$OUT" 2>"$ERR" || true # its other checks (shims, hooks) are not this suite's
expect_contains "ok    engines  2 of 2 answer (no engine.max_runs): docker@$DOCKER_END (label=d) 0 in flight; podman@$PODMAN_END (label=p) 0 in flight" "$OUT"

check "an unknown engine= refuses every run with one line naming the file, line and word"
write_user_config <<EOF
endpoints = $DOCKER_END engine=docker
endpoints = $PODMAN_END engine=lxc
EOF
expect_exit 125 sandshim run -- sh -c 'exit 0'
expect_lines 1 "$ERR"
line=$(grep -n -m1 '^endpoints' "$XDG_CONFIG_HOME/sandshim/config" | cut -d: -f1) # the list's first line
expect_contains "$XDG_CONFIG_HOME/sandshim/config:$line: engine.endpoints = " "$ERR"
expect_contains '"engine=lxc": expected docker or podman' "$ERR"

check "podman on tcp:// stays refused with one line (podman's client has no TLS)"
write_user_config <<EOF
endpoints = $DOCKER_END engine=docker
endpoints = tcp://127.0.0.1:9 engine=podman tls_cert_path=$T label=t
require_labels = t
EOF
expect_exit 125 sandshim run -- sh -c 'exit 0'
expect_lines 1 "$ERR"
expect_contains "podman's client has no TLS for tcp://, so anyone who reaches it is root there" "$ERR"

check "no container left on docker either"
left=$(suite_container_names | sort -u | comm -12 - <("$DOCKER_CLIENT" ps -a --format '{{.Names}}' | sort -u))
[[ -z $left ]] || miss "containers left on docker: $left"

suite_done
