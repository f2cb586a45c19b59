#!/usr/bin/env bash
# sandshim-test-engines: docker
# Every limit a run hits names itself after the program's output (key, value, the line to add and
# the file), and the audit row's limit_hit says which; TMPDIR and SHELL hold inside; exec from
# /tmp only with sandbox.tmp_exec; a host script the image lacks is one line, exit 127.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CONFIG=$XDG_CONFIG_HOME/sandshim/config
THREADS='import threading, time
try:
    for i in range(40):
        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
except RuntimeError:
    time.sleep(0.5)
    raise SystemExit(42)
raise SystemExit(73)'

check "the pids cap names sandbox.pids, from the cgroup's events"
printf '[sandbox]\npids = 16\n' | write_user_config
expect_exit 42 sandshim run -- python3 -c "$THREADS"
expect_contains "sandshim: limit hit: sandbox.pids = 16 (" "$ERR"
expect_contains "to lift it, add \`sandbox.pids = 64\` to $CONFIG" "$ERR"
expect_equal sandbox.pids "$(audit_field last limit_hit)" "limit_hit"

check "control: under a cap the threads fit in, no limit is named"
printf '[sandbox]\npids = 128\n' | write_user_config
expect_exit 73 sandshim run -- python3 -c "$THREADS"
expect_not_contains "limit hit" "$ERR"
expect_equal "" "$(audit_field last limit_hit)" "limit_hit"
reset_user_config

check "TMPDIR and SHELL point inside the sandbox"
TMPDIR=/host/tmp SHELL=/host/shell expect_exit 42 sandshim run -- sh -c '[ "$TMPDIR" = /tmp ] && [ "$SHELL" = /bin/sh ] && exit 42; exit 73'

check "exec from /tmp is refused and names sandbox.tmp_exec"
expect_exit 126 sandshim run -- sh -c 'cp /bin/true /tmp/t && /tmp/t'
expect_contains "limit hit: sandbox.tmp_exec = false" "$ERR"
expect_contains "add \`sandbox.tmp_exec = true\` to $CONFIG" "$ERR"

check "with sandbox.tmp_exec = true in the user config, exec from /tmp works"
printf '[sandbox]\ntmp_exec = true\n' | write_user_config
expect_exit 42 sandshim run -- sh -c 'cp /bin/true /tmp/t && /tmp/t && exit 42'
reset_user_config

check "a workspace file may not set sandbox.tmp_exec"
printf '[sandbox]\ntmp_exec = true\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- sh -c 'exit 42'
expect_contains "sandbox.tmp_exec" "$ERR"
rm -f "$WS/.sandshim.conf"

check "a full /tmp names sandbox.tmp_size"
printf '[sandbox]\ntmp_size = 1m\n' | write_user_config
expect_exit 1 sandshim run -- sh -c 'head -c 2000000 /dev/zero >/tmp/big'
expect_contains "limit hit: sandbox.tmp_size = 1m" "$ERR"
reset_user_config

check "the deadline names sandbox.timeout and the line that lifts it"
printf '[sandbox]\ntimeout = 2s\n' | write_user_config
expect_exit 124 sandshim run -- sh -c 'sleep 20'
expect_contains "limit hit: sandbox.timeout = 2s (the run reached its deadline); to lift it, add \`sandbox.timeout = 8s\` to $CONFIG" "$ERR"
expect_equal sandbox.timeout "$(audit_field last limit_hit)" "limit_hit"
reset_user_config

check "npm install without a network fails at once and names sandbox.network, not the deadline"
# npm would retry the registry past any deadline; the sandbox runs it offline (npm_config_offline).
printf '{"name":"offline","version":"1.0.0","dependencies":{"left-pad":"1.3.0"}}\n' >"$WS/package.json"
chmod a+r "$WS/package.json"
printf '[sandbox]\ntimeout = 20s\n' | write_user_config
started=$SECONDS
expect_exit 1 sandshim run -- node /usr/bin/npm install # as `#!/usr/bin/env node` runs it through the shims
expect_contains "ENOTCACHED" "$ERR"
expect_contains "limit hit: sandbox.network = none (a connection found no network: the sandbox has none); to lift it, add \`sandbox.network = allowlist\` to $CONFIG" "$ERR"
expect_not_contains "sandbox.timeout" "$ERR"
(( SECONDS - started < 15 )) || fail "npm install took $((SECONDS - started)) s, as if it waited for the deadline"
expect_equal sandbox.network "$(audit_field last limit_hit)" "limit_hit"
# python's resolver says the same in its own words; a run that reaches nothing names nothing.
expect_exit 1 sandshim run -- python3 -c 'import socket; socket.getaddrinfo("pypi.org", 443)'
expect_contains "limit hit: sandbox.network = none" "$ERR"
expect_exit 0 sandshim run -- node /usr/bin/npm --version
expect_not_contains "limit hit" "$ERR"
rm "$WS/package.json"
reset_user_config

check "a host script the image lacks is one line, exit 127, no stack trace"
printf 'console.log("host only")\n' >"$T/host-only.js"
cp "$T/host-only.js" /usr/local/bin/sandshim-parity-host-only.js 2>/dev/null ||
    skip_or_fail "cannot write /usr/local/bin (run as root)"
rc=0
sandshim run -- node /usr/local/bin/sandshim-parity-host-only.js >"$OUT" 2>"$ERR" || rc=$?
rm -f /usr/local/bin/sandshim-parity-host-only.js
expect_equal 127 "$rc" "exit code"
expect_contains '"/usr/local/bin/sandshim-parity-host-only.js" is a file on the host but not in the image' "$ERR"
expect_not_contains "Cannot find module" "$ERR"

suite_done
