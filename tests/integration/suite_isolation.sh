#!/usr/bin/env bash
# sandshim-test-warm: docker
# sandshim-test-client: docker
# Isolation, proven from inside the container: each forbidden action fails under the default
# policy, and a control shows the same action succeeding where it is allowed, so no check can
# pass by accident. Network rule: traffic only ever goes to loopback; under --network bridge we
# only look at interfaces and routes.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$WS/probe" "$WS/sub" "$WS/other" "$WS/rw"
chmod 777 "$WS/rw" # writable by the sandbox user: only the read-only mount may stop a write

cat >"$WS/probe/connect.py" <<'EOF'
# 42: connected to 127.0.0.1:PORT; 73: connection refused.
import socket, sys
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except ConnectionRefusedError:
    sys.exit(73)
sys.exit(42)
EOF
cat >"$WS/probe/dns.py" <<'EOF'
# Run only inside the sandbox. localhost resolves (from /etc/hosts); a DNS name does not: 42.
import socket, sys
socket.getaddrinfo("localhost", 80)
try:
    socket.getaddrinfo("sandshim-probe.example.com", 80)
except socket.gaierror as e:
    print(e)
    sys.exit(42)
sys.exit(73)
EOF
cat >"$WS/sub/where.py" <<'EOF'
import os
print(os.getcwd())
print(open(os.path.join(os.path.dirname(__file__), "data.txt")).read().strip())
EOF
echo "data-beside-the-script" >"$WS/sub/data.txt"

start_loopback_listener

check "network: only the loopback interface, no routes"
expect_exit 0 sandshim run -- sh -c 'ls /sys/class/net; echo ---; tail -n +2 /proc/net/route'
expect_file_is "$OUT" "$(printf 'lo\n---')"

bridge=$("$DOCKER" network inspect bridge --format '{{index .Options "com.docker.network.bridge.name"}}' 2>/dev/null || true)
if [[ -n $bridge && -e /sys/class/net/$bridge ]]; then
    check "network control: under --network bridge an eth0 and a route appear (looked at, nothing sent)"
    expect_exit 0 sandshim run --network bridge -- sh -c 'ls /sys/class/net; echo ---; tail -n +2 /proc/net/route'
    expect_contains eth0 "$OUT"
    [[ $(sed -n '/^---$/,$p' "$OUT" | grep -c eth0) -ge 1 ]] || fail "no route through eth0: $(cat "$OUT")"
else
    # An engine without a working bridge (no ${bridge:-docker0} on the host) cannot give a
    # sandbox a network; the probe itself is shown to see interfaces and routes in the host's
    # network namespace instead (looked at, nothing sent).
    check "network control: the probe sees interfaces and routes where there are some (engine has no bridge: host namespace)"
    "$DOCKER" run --rm --network host --pull=never --log-driver=none \
        "${PLAIN_RUN_LIMITS[@]}" sandshim/sh:bookworm \
        sh -c 'ls /sys/class/net; echo ---; tail -n +2 /proc/net/route' >"$T/hostnet.out"
    [[ $(grep -vc -e '^lo$' -e '^---$' "$T/hostnet.out") -ge 2 ]] ||
        fail "the probe saw no interface or route besides lo: $(cat "$T/hostnet.out")"
fi

check "network: TCP to the host's loopback listener is refused inside, accepted on the host"
expect_exit 42 "$HOST_PY" "$WS/probe/connect.py" "$LISTEN_PORT"
expect_exit 73 sandshim run -- python probe/connect.py "$LISTEN_PORT"

check "network: a DNS name does not resolve, localhost does"
expect_exit 42 sandshim run -- python probe/dns.py
expect_contains "name resolution" "$OUT"

check "root filesystem is read-only; /tmp is writable"
# /var/tmp is mode 1777 in the image: only the read-only mount can refuse the write.
expect_exit 42 sandshim run -- sh -c 'touch /var/tmp/p; touch /usr/p; touch /tmp/p && exit 42'
expect_contains "cannot touch '/var/tmp/p': Read-only file system" "$ERR"
expect_contains "cannot touch '/usr/p': Read-only file system" "$ERR"

check "workspace is read-only; --workspace rw makes it writable"
expect_exit 73 sandshim run -- sh -c 'touch rw/p || exit 73'
expect_contains "Read-only file system" "$ERR"
[[ ! -e $WS/rw/p ]] || fail "rw/p was created through a read-only workspace"
expect_exit 42 sandshim run --workspace rw -- sh -c 'touch rw/p && exit 42'
[[ -e $WS/rw/p ]] || fail "rw/p missing on the host after a write through --workspace rw"
rm -f "$WS/rw/p"

check "a workspace named 'w,readonly=false' stays read-only (the name cannot change the mount)"
odd=$T/'w,readonly=false'
mkdir -p "$odd"
chmod 777 "$odd"
git -C "$odd" init -q
(cd "$odd" && expect_exit 73 sandshim run -- sh -c 'touch p || exit 73')
expect_contains "Read-only file system" "$ERR"
(cd "$odd" && expect_exit 42 sandshim run --workspace rw -- sh -c 'touch p && exit 42')
[[ -e $odd/p ]] || fail "control: no file after a write through --workspace rw"

check "the home directory and / are refused as workspaces (125), nothing runs"
(cd "$HOME" && expect_exit 125 sandshim run -- sh -c 'exit 42')
expect_file_is "$ERR" "sandshim: refusing to mount your home directory \"$HOME\" as the workspace: run from a project directory (or \`git init\` one); nothing ran"
(cd / && expect_exit 125 sandshim run -- sh -c 'exit 42')
expect_file_is "$ERR" "sandshim: refusing to mount / as the workspace: run from a project directory; nothing ran"

check "/tmp is noexec: a copied binary does not run there, but does from an exec mount"
expect_exit 73 sandshim run -- sh -c 'cp /bin/true /tmp/t || exit 1; /tmp/t && exit 42; exit 73'
expect_contains "Permission denied" "$ERR"
expect_exit 42 sandshim run --workspace rw -- sh -c 'cp /bin/true rw/t || exit 1; rw/t && exit 42; exit 73'
rm -f "$WS/rw/t"

check "/tmp is capped at 64 MiB: 32 MiB fit, 80 MiB stop at the cap; --tmp-size 128m fits 80 MiB"
# dd reports on stdout: a full /tmp has no room for a file of its errors.
fill='dd if=/dev/zero of=/tmp/f bs=1M count=32 2>/dev/null || exit 1; rm /tmp/f
dd if=/dev/zero of=/tmp/f bs=1M count=80 2>&1 && exit 42
stat -c %s /tmp/f; exit 73'
expect_exit 73 sandshim run -- sh -c "$fill"
expect_contains "No space left on device" "$OUT"
size=$(tail -n 1 "$OUT")
((size >= 60 << 20 && size <= 64 << 20)) || fail "/tmp took $size bytes, expected about 64 MiB"
expect_exit 42 sandshim run --tmp-size 128m -- sh -c "$fill"

check "identity probe: a plain docker run (no sandshim) shows capabilities, uid 0, NoNewPrivs 0"
probe='grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs):" /proc/self/status; echo "uid: $(id -u)"; echo "host: $(hostname)"'
"$DOCKER" run --rm --network none --pull=never --log-driver=none \
    "${PLAIN_RUN_LIMITS[@]}" sandshim/sh:bookworm sh -c "$probe" \
    >"$T/plain.out"
grep -q '^CapEff:[[:space:]]*0*[1-9a-f]' "$T/plain.out" || fail "the control shows no capability: $(cat "$T/plain.out")"
expect_contains "NoNewPrivs:	0" "$T/plain.out"
expect_contains "uid: 0" "$T/plain.out"
expect_exit 0 sandshim run -- sh -c "$probe"
cp "$OUT" "$T/identity.out"

check "no capabilities: CapEff, CapPrm and CapBnd are zero"
expect_contains "CapEff:	0000000000000000" "$T/identity.out"
expect_contains "CapPrm:	0000000000000000" "$T/identity.out"
expect_contains "CapBnd:	0000000000000000" "$T/identity.out"

check "no-new-privileges is set"
expect_contains "NoNewPrivs:	1" "$T/identity.out"

check "non-root user: 65534 when root calls, else the caller's uid; hostname sandbox"
if [[ $(id -u) == 0 ]]; then
    expect_contains "uid: 65534" "$T/identity.out"
else
    expect_contains "uid: $(id -u)" "$T/identity.out"
fi
expect_contains "host: sandbox" "$T/identity.out"

check "host secrets stay out; allowlisted names pass; [env] allow adds a name, never a secret"
export AWS_SECRET_ACCESS_KEY=canary-aws-value GITHUB_TOKEN=canary-gh-value
export ANTHROPIC_API_KEY=canary-anthropic-value MY_PASSWORD=canary-password-value
export PYTHONPATH=/canary/pythonpath TZ=CANARY0 FOO_SETTING=canary-foo-value
expect_exit 0 sandshim run -- sh -c env
for secret in AWS_SECRET_ACCESS_KEY GITHUB_TOKEN ANTHROPIC_API_KEY MY_PASSWORD; do
    expect_not_contains "$secret" "$OUT"
done
expect_not_contains canary- "$OUT"
expect_contains "PYTHONPATH=/canary/pythonpath" "$OUT"
expect_contains "LANG=C.UTF-8" "$OUT"
expect_contains "TZ=CANARY0" "$OUT"
expect_not_contains FOO_SETTING "$OUT"
printf '[env]\nallow = FOO_SETTING GITHUB_TOKEN\n' | write_user_config
# In the background, to look at every host process's command line while the container runs.
"$SANDSHIM_BIN" run -- sh -c 'env; sleep 3' >"$T/env.out" 2>"$T/env.err" &
BG_PIDS+=($!)
env_run=$!
wait_for_running_container 20 >/dev/null
# The pattern is written so that grep's own command line does not match it.
if grep -l 'canary[-]' /proc/[0-9]*/cmdline 2>/dev/null; then
    fail "a variable's value shows in a host process's command line"
fi
wait "$env_run" || fail "the background run failed: $(cat "$T/env.err")"
expect_contains "FOO_SETTING=canary-foo-value" "$T/env.out"
expect_not_contains GITHUB_TOKEN "$T/env.out"
expect_not_contains AWS_SECRET_ACCESS_KEY "$T/env.out"
reset_user_config
unset AWS_SECRET_ACCESS_KEY GITHUB_TOKEN ANTHROPIC_API_KEY MY_PASSWORD PYTHONPATH FOO_SETTING
export TZ=UTC

check "stdin is forwarded: a script piped into python - and into sh"
echo 'print(6*7)' >"$T/stdin.py"
EXPECT_STDIN=$T/stdin.py expect_exit 0 sandshim run -- python -
expect_file_is "$OUT" 42
printf 'echo from-stdin\nexit 73\n' >"$T/stdin.sh"
EXPECT_STDIN=$T/stdin.sh expect_exit 73 sandshim run -- sh
expect_file_is "$OUT" from-stdin

check "stdout and stderr stay separate, and sandshim adds nothing to either"
expect_exit 42 sandshim run -- sh -c 'echo to-out; echo to-err >&2; exit 42'
expect_file_is "$OUT" to-out
expect_file_is "$ERR" to-err

check "a TTY only when the caller has one on both ends"
expect_exit 73 sandshim run -- sh -c 'test -t 0 && test -t 1 && exit 42; exit 73'
expect_exit 42 script -qec "$(printf '%q ' "$SANDSHIM_BIN" run -- sh -c 'test -t 0 && test -t 1 && exit 42; exit 73')" /dev/null

check "exit codes propagate (python 73, node 42)"
expect_exit 73 sandshim run -- python -c 'import sys; sys.exit(73)'
expect_exit 42 sandshim run -- node -e 'process.exit(42)'

check "relative paths and the cwd mean the same inside: from the root and from subdirectories"
expect_exit 0 sandshim run -- python sub/where.py
expect_file_is "$OUT" "$(printf '%s\n%s' "$WS" data-beside-the-script)"
(cd "$WS/sub" && expect_exit 0 sandshim run -- python where.py)
expect_file_is "$OUT" "$(printf '%s\n%s' "$WS/sub" data-beside-the-script)"
(cd "$WS/other" && expect_exit 0 sandshim run -- python ../sub/where.py)
expect_file_is "$OUT" "$(printf '%s\n%s' "$WS/other" data-beside-the-script)"

check "an argument naming a host path outside the workspace is refused (125), nothing runs"
mkdir -p "$T/outside"
echo 'import sys; sys.exit(42)' >"$T/outside/x.py"
before=$(run_count)
expect_exit 125 sandshim run -- python "$T/outside/x.py"
expect_file_is "$ERR" "sandshim: \"$T/outside/x.py\" is outside the workspace \"$WS\" and not visible in the sandbox; copy it into the workspace; nothing ran"
expect_file_is "$OUT" ""
expect_run last refused 125
expect_equal $((before + 1)) "$(run_count)" "rows after one refused run"
expect_exit 125 sandshim run -- python ../outside/x.py
expect_contains "is outside the workspace" "$ERR"
cp "$T/outside/x.py" "$WS/x.py"
expect_exit 42 sandshim run -- python "$WS/x.py" # control: the same file inside the workspace runs

suite_done
