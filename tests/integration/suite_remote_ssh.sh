#!/usr/bin/env bash
# A remote engine over ssh (engine.endpoint = ssh://…): the second dockerd of remote_engine.sh,
# reached through an sshd of the suite's own running in that engine's network and mount
# namespaces (where the workspace's path does not exist), with a host key, an authorized key and a
# known_hosts the suite makes. Each API call is `ssh … docker system dial-stdio`: the workspace
# travels, sandbox.writable comes back, the audit row names the engine; a host key that
# known_hosts does not hold refuses the run with one line before anything runs; no ssh or sshd
# is left.
# sandshim-test-engines: docker
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=remote_engine.sh
. "$SOURCE_DIR/tests/integration/remote_engine.sh"

SSHD_PID=""
# Stops the suite's sshd by its pid (its connections' own processes end with their clients).
sshd_stop() {
    [[ -n $SSHD_PID ]] || return 0
    kill -TERM "$SSHD_PID" 2>/dev/null || true
    local _
    for _ in $(seq 50); do
        kill -0 "$SSHD_PID" 2>/dev/null || break
        sleep 0.1
    done
    ! kill -0 "$SSHD_PID" 2>/dev/null || kill -KILL "$SSHD_PID"
    SSHD_PID=""
}
trap 'rc=$?; sshd_stop; remote_engine_stop; (exit $rc); cleanup' EXIT

for tool in /usr/sbin/sshd /usr/bin/ssh /usr/bin/ssh-keygen; do
    [[ -x $tool ]] || skip_or_fail "no $tool (install/deps.sh installs openssh-server and openssh-client)"
done
remote_engine_start sandshim/python:bookworm
address=${REMOTE_ENGINE_ENDPOINT#tcp://}
address=${address%:2376}
readonly port=2222

# sshd's files live beside the engine's (the suite's directory $T is hidden in its namespace);
# the client's key and known_hosts stay in $T.
sshd_dir=$REMOTE_ENGINE_DIR/sshd
client_dir=$T/ssh
mkdir -p "$sshd_dir" "$client_dir"
ssh-keygen -q -t ed25519 -N '' -C sandshim-test-host -f "$sshd_dir/host_key"
ssh-keygen -q -t ed25519 -N '' -C sandshim-test-client -f "$client_dir/id"
ssh-keygen -q -t ed25519 -N '' -C sandshim-test-other -f "$client_dir/other_host_key"
cp "$client_dir/id.pub" "$sshd_dir/authorized_keys"
printf '[%s]:%s %s\n' "$address" "$port" "$(cut -d' ' -f1,2 "$sshd_dir/host_key.pub")" >"$client_dir/known_hosts"
printf '[%s]:%s %s\n' "$address" "$port" "$(cut -d' ' -f1,2 "$client_dir/other_host_key.pub")" >"$client_dir/changed_known_hosts"
: >"$client_dir/empty_known_hosts"
cat >"$sshd_dir/sshd_config" <<EOF
ListenAddress $address:$port
HostKey $sshd_dir/host_key
PidFile $sshd_dir/sshd.pid
AuthorizedKeysFile $sshd_dir/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers root
PrintMotd no
SetEnv DOCKER_HOST=unix://$REMOTE_ENGINE_SOCKET
EOF
mkdir -p /run/sshd # sshd's privilege separation directory (the package's tmpfiles entry)
setsid nsenter --target "$(remote_engine_pid)" --net --mount -- \
    /usr/sbin/sshd -D -E "$sshd_dir/sshd.log" -f "$sshd_dir/sshd_config" </dev/null &
SSHD_PID=$!
disown
sshd_answers() {
    ssh -F none -o BatchMode=yes -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$client_dir/known_hosts" \
        -i "$client_dir/id" -p "$port" root@"$address" true 2>/dev/null
}
wait_until 10 "sshd answers on $address:$port" sshd_answers
# Logins so far (sshd logs each accepted key): one per API call.
logins() { grep -c "Accepted publickey" "$sshd_dir/sshd.log" || true; }
readonly endpoint=ssh://root@$address:$port

# A run's guardian removes its container again until the run's deadline has passed (5 s more):
# a short deadline lets every guardian end before the suite does (the last check waits for them).
ssh_config() { # KNOWN_HOSTS; extra config lines on stdin
    write_user_config < <(printf 'endpoint = %s\nssh_identity = %s\nssh_known_hosts = %s\n' \
        "$endpoint" "$client_dir/id" "$1"
        printf '[sandbox]\ntimeout = 20s\n'
        cat)
}

# ssh clients started for this engine (their command line names its address), at this moment.
ssh_clients() {
    local proc cmd
    for proc in /proc/[0-9]*; do
        { cmd=$(tr '\0' ' ' <"$proc/cmdline"); } 2>/dev/null || continue
        [[ $cmd == /usr/bin/ssh\ *" $address docker system dial-stdio "* ]] && echo "${proc#/proc/}"
    done
    return 0
}
no_ssh_clients() { [[ -z $(ssh_clients) ]]; }
# The detached guardians of this suite's runs (their command line is the run's own).
sshd_left() { ip netns pids "$REMOTE_ENGINE_NETNS" | xargs -r ps -o pid=,args= -p | grep sshd || true; }
sshd_gone() { [[ -z $(sshd_left) ]]; }
run_container_on_engine() { [[ -n $(remote_docker ps -q --filter label=org.sandshim.run) ]]; }
no_run_container_on_engine() { [[ -z $(remote_docker ps -aq --filter label=org.sandshim.run) ]]; }

mkdir -p "$WS/pkg" "$WS/out"
printf 'VALUE = 42\n' >"$WS/pkg/data.py"
cat >"$WS/main.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkg.data import VALUE
print("value", VALUE, "cwd", os.getcwd())
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
PY
git -C "$WS" add -A >/dev/null

check "the workspace's path does not exist on the ssh engine's machine"
[[ -e $WS && ! -e /proc/$(remote_engine_pid)/root$WS ]] || fail "the engine's mount namespace shows $WS"

check "a python run over ssh sees the shipped workspace, and its exit code and row are the engine's"
ssh_config "$client_dir/known_hosts" </dev/null
expect_exit 42 sandshim run -- python main.py 42
expect_contains "value 42 cwd $WS" "$OUT"
expect_run last error 42
expect_equal "docker@$endpoint" "$(audit_field last engine)" "the audit row's engine"
expect_contains "sent" <(audit_field last message)
say "a first run over ssh (snapshot sent): $ELAPSED_MS ms"
before=$(logins)
expect_exit 0 sandshim run -- python main.py
expect_contains "on the engine already" <(audit_field last message)
say "a repeated run over ssh: $ELAPSED_MS ms, $(($(logins) - before)) ssh logins"
write_user_config <<<"endpoint = $REMOTE_ENGINE_ENDPOINT
tls_cert_path = $REMOTE_ENGINE_CERTS
[sandbox]
timeout = 20s"
expect_exit 0 sandshim run -- python main.py
say "the same run over TLS to the same engine: $ELAPSED_MS ms"

check "what the run writes in sandbox.writable comes back over ssh"
ssh_config "$client_dir/known_hosts" <<<'writable = out'
# A longer deadline than the suite's: with a writable volume a run is ~12 ssh logins, which took
# past 20 s once with every CI tier running (its guardian then lives until this deadline).
expect_exit 0 sandshim run --timeout 60s -- python -c 'open("out/result.txt", "w").write("computed over ssh\n")'
expect_file_is "$WS/out/result.txt" "computed over ssh"
expect_contains "returned 1 files" <(audit_field last message)
expect_run last ok 0

check "the deadline ends a run over ssh as it does locally"
ssh_config "$client_dir/known_hosts" </dev/null
expect_exit 124 sandshim run --timeout 2s -- python -c 'import time; time.sleep(30)'
expect_run last timeout 124

check "a shim killed by SIGKILL leaves no container and no ssh behind"
"$SANDSHIM_BIN" run -- python -c 'import time; time.sleep(60)' >/dev/null 2>&1 &
shim_pid=$!
BG_PIDS+=("$shim_pid")
wait_until 30 "the run's container starts" run_container_on_engine
kill -KILL "$shim_pid"
wait "$shim_pid" 2>/dev/null || true
wait_until 20 "the guardian removes the container over ssh" no_run_container_on_engine
wait_until 10 "every ssh client of the killed run ends" no_ssh_clients

check "doctor's engines line says the ssh engine answers, and why another does not"
cat >"$XDG_CONFIG_HOME/sandshim/config" <<EOF
[engine]
name = docker
endpoints = $endpoint ssh_identity=$client_dir/id ssh_known_hosts=$client_dir/known_hosts
endpoints = ssh://$address:$port ssh_identity=$client_dir/id ssh_known_hosts=$client_dir/empty_known_hosts label=unknown
EOF
# Its other checks (shims on PATH, agent hooks) are not this suite's: its exit code is not asserted.
sandshim doctor >"$T/doctor.out" 2>&1 || true
grep '^[a-z]* *engines ' "$T/doctor.out" >"$T/engines.line" || true
say "doctor: $(cat "$T/engines.line")"
expect_contains "1 of 2 answer" "$T/engines.line"
expect_contains "its host key is not in known_hosts" "$T/engines.line"

check "a host key known_hosts does not hold refuses the run with one line, and nothing runs"
ssh_config "$client_dir/empty_known_hosts" </dev/null
rm -f "$WS/out/result.txt"
expect_exit 125 sandshim run -- python -c 'open("out/result.txt", "w").write("ran\n")'
expect_lines 1 "$ERR"
expect_contains "unreachable ($endpoint: its host key is not in known_hosts (" "$ERR"
expect_contains "; nothing ran" "$ERR"
expect_run last engine_error 125
[[ -z $(remote_docker ps -aq) && ! -e $WS/out/result.txt ]] || miss "something ran on the engine"

check "a host key that changed is refused with one line"
ssh_config "$client_dir/changed_known_hosts" </dev/null
expect_exit 125 sandshim run -- python -c 'pass'
expect_lines 1 "$ERR"
expect_contains "its host key changed since known_hosts took it" "$ERR"

check "no ssh client and no sshd is left"
wait_until 90 "every guardian of the suite's runs ends" remote_runs_ended
wait_until 10 "every ssh client ends" no_ssh_clients
say "sshd processes before its stop: $(sshd_left | tr '\n' ';')"
sshd_stop
[[ -z $(sshd_left) ]] || say "sshd processes after its stop: $(sshd_left | tr '\n' ';')"
wait_until 10 "every sshd process ends" sshd_gone
left=$(remote_docker ps -aq)
[[ -z $left ]] || miss "containers left on the ssh engine: $left"

suite_done
