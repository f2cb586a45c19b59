#!/usr/bin/env bash
# podman's cold run over its API service (`podman system service`, started here when none answers
# at this user's socket, and stopped only if started here): the run creates through libpod (whose
# body carries podman's --read-only-tmpfs=false, --init-path, --cgroups=enabled and --unsetenv,
# which the compat create would drop) and attaches, waits, signals and removes over the socket,
# with the podman client never running; each property holds on that path with its control. With
# the service gone (a socket file nobody answers on), runs fall back to the client, and doctor and
# the debug log say which path is in force. About 40 s.
# sandshim-test-engines: podman
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../../install/lib/podman_service.sh
. "$SOURCE_DIR/install/lib/podman_service.sh"

socket=$(podman_service_default_socket) || skip_or_fail "no socket for podman's API service"
stop_service() { podman_service_stop_if_started; }
trap 'rc=$?; stop_service; (exit $rc); cleanup' EXIT
podman_service_ensure "$T/podman-service.log" "$socket" || die "podman's API service does not start"

# The real client behind a wrapper that records each call: engine.path names it.
mkdir -p "$T/recording"
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\nexec "%s" "$@"\n' "$T/client.log" "$ENGINE_CLIENT" >"$T/recording/podman"
chmod 755 "$T/recording/podman"
configure() { # API(on|off) [MORE CONFIG]
    write_user_config <<<"api = $1
path = $T/recording/podman
${2:-}"
    : >"$T/client.log"
}
client_ran_run() { grep -q '^run ' "$T/client.log"; }

check "the run goes over podman's API service (libpod create), and the client never runs"
configure on
expect_exit 42 env SANDSHIM_LOG=debug "$SANDSHIM_BIN" run -- sh -c 'exit 42'
expect_contains "run: over the API socket unix://$socket (libpod create)" "$ERR"
! client_ran_run || fail "the client ran the container: $(cat "$T/client.log")"
expect_run last error 42
check "control: engine.api = off: the same run goes through the client"
configure off
expect_exit 42 env SANDSHIM_LOG=debug "$SANDSHIM_BIN" run -- sh -c 'exit 42'
expect_not_contains "run: over the API socket" "$ERR"
client_ran_run || fail "engine.api = off, yet the client did not run the container"

configure on
check "doctor says the cold runs go over podman's API service"
doctor() { sandshim doctor >"$OUT" 2>&1 || true; } # other checks (shims, hooks) fail here
doctor
expect_contains "cold runs over podman's API service at $socket" "$OUT"

check "the sandbox seen from inside is the same over the API as through the client (mounts, privileges, limits, env)"
# Everything the hardening flags decide, as the program sees it; the cgroup files are cgroup v1's
# and v2's (whichever exist).
cat >"$WS/sandbox-facts.sh" <<'FACTS'
awk '{print $5, $9, $6, $11}' /proc/self/mountinfo | sed -E 's/(size|nr_inodes|mode)=[^,]*,?//g' | sort
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status
id; ulimit -a | sort; env | grep -v -e '^HOSTNAME=' -e '^PWD=' -e '^SHLVL=' -e '^_=' | sort
for f in memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes pids/pids.max cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us memory.max memory.swap.max pids.max cpu.max; do
    [ -r "/sys/fs/cgroup/$f" ] && echo "$f $(cat "/sys/fs/cgroup/$f")"
done
tr '\0' ' ' </proc/1/cmdline | cut -d' ' -f1-2; hostname
FACTS
for mode in on off; do
    configure "$mode"
    expect_exit 0 sandshim run -- sh sandbox-facts.sh
    cp "$OUT" "$T/facts.$mode"
done
diff "$T/facts.off" "$T/facts.on" >"$T/facts.diff" || fail "the sandbox differs over the API (< client, > API): $(cat "$T/facts.diff")"
grep -q "^NoNewPrivs:	1" "$T/facts.on" || fail "the facts miss what they are for: $(head -c 1500 "$T/facts.on")"
configure on

check "no network: only loopback (control: bridge gives more, looked at only)"
expect_exit 0 sandshim run -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
expect_file_is "$OUT" "lo"
expect_exit 0 sandshim run --network bridge -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
[[ $(grep -vc '^lo$' "$OUT") -ge 1 ]] || fail "under --network bridge no interface besides lo: $(cat "$OUT")"
! client_ran_run || fail "the client ran a container: $(cat "$T/client.log")"

check "read-only root, with no writable tmpfs on /run or /var/tmp (the compat create's loss); /tmp writable"
for dir in /etc /run /var/tmp; do
    expect_exit 73 sandshim run -- sh -c "touch $dir/probe 2>/dev/null && exit 42 || exit 73"
done
expect_exit 42 sandshim run -- sh -c 'touch /tmp/probe && exit 42 || exit 73'

check "not root inside, no capabilities, no new privileges (control: the host's root has them)"
expect_exit 0 sandshim run -- sh -c 'id -u; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status'
[[ $(head -1 "$OUT") != 0 ]] || fail "uid 0 inside"
expect_contains "CapEff:	0000000000000000" "$OUT"
expect_contains "NoNewPrivs:	1" "$OUT"
grep -q "^CapEff:	0000000000000000" /proc/self/status && fail "control: the host's root has no capabilities either"
grep -q "^NoNewPrivs:	0" /proc/self/status || fail "control: the harness itself runs with no_new_privs"

check "TERM is unset when the caller has none (podman would set xterm); control: the caller's TERM reaches it"
expect_exit 42 env -u TERM "$SANDSHIM_BIN" run -- sh -c '[ -z "${TERM:-}" ] && exit 42 || exit 73'
expect_exit 42 env TERM=xterm-sandshim "$SANDSHIM_BIN" run -- sh -c '[ "${TERM:-}" = xterm-sandshim ] && exit 42 || exit 73'

check "exit codes: 42, 127 for a missing program, 126 for one that cannot run, as the client gives them"
for mode in on off; do
    configure "$mode"
    expect_exit 42 sandshim run -- sh -c 'exit 42'
    expect_exit 127 sandshim run -- sh -c 'exec /no/such/program'
    expect_exit 127 sandshim run --image sandshim/sh:bookworm -- no-such-program-here
    expect_exit 126 sandshim run --image sandshim/sh:bookworm -- /etc
done
configure on

check "stdin reaches the container through the attach stream byte for byte, up to its EOF"
head -c 300000 /dev/urandom >"$T/in.bin"
EXPECT_STDIN=$T/in.bin expect_exit 0 sandshim run -- sh -c sha256sum
expect_equal "$(sha256sum <"$T/in.bin")" "$(cat "$OUT")" "stdin's digest outside and inside"

check "the deadline kills a busy loop: 124, nothing left (control: a run inside the deadline ends 42)"
expect_exit 124 sandshim run --timeout 3s -- sh -c 'while :; do :; done'
expect_run last timeout 124
! container_exists "sandshim-$(last_run_id)" || fail "the container outlived its deadline"
expect_exit 42 sandshim run --timeout 3s -- sh -c 'exit 42'

check "the memory limit: 137 with the client's status (oom; killed where podman reports no OOM); a SIGKILL of its own is never oom"
# podman 4.3 with runc on cgroup v1 reports no OOM kill on either path (docs/engines.md: known gap on podman).
for mode in off on; do
    configure "$mode" $'[sandbox]\nmemory = 64m'
    expect_exit 137 sandshim run -- sh -c 'dd if=/dev/zero of=/dev/null bs=200M count=1 2>/dev/null'
    declare "oom_status_$mode=$(audit_field last status)"
done
expect_equal "$oom_status_off" "$oom_status_on" "the OOM-killed run's status over the API and through the client"
[[ $oom_status_on == oom || $oom_status_on == killed ]] || fail "an OOM kill has status '$oom_status_on'"
expect_exit 137 sandshim run -- sh -c 'kill -KILL $$'
expect_run last killed 137
! client_ran_run || fail "the client ran a container: $(cat "$T/client.log")"

check "the service gone (its socket left with nobody behind it): runs fall back to the client, and say so"
if ! podman_service_started_here; then
    skip_check_on podman "the service at $socket was not started by this suite; it is left alone"
else
    podman_service_stop_if_started
    "$HOST_PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$socket"
    configure on
    expect_exit 42 env SANDSHIM_LOG=debug "$SANDSHIM_BIN" run -- sh -c 'exit 42'
    expect_contains "run: over the podman client: its API service does not answer at $socket" "$ERR"
    client_ran_run || fail "the service is gone, yet the client did not run the container"
    doctor
    expect_contains "cold runs over the podman client: its API service does not answer" "$OUT"
    rm -f "$socket"
fi

reset_user_config
assert_no_sandshim_containers
suite_done
