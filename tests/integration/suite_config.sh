#!/usr/bin/env bash
# The layered policy: bad config fails with file:line for every problem and runs nothing; a
# workspace .sandshim.conf (it comes with untrusted repositories) may tighten but never loosen,
# while the user's own config may set the same values.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

USER_CONFIG=$XDG_CONFIG_HOME/sandshim/config
WS_CONFIG=$WS/.sandshim.conf
mkdir -p "$WS/rw"
chmod 777 "$WS/rw"
marker=$WS/rw/marker
would_mark=(sh -c 'touch rw/marker; exit 42')

expect_refused_nothing_ran() {
    expect_lines 1 "$ERR"
    expect_contains "; nothing ran" "$ERR"
    [[ ! -e $marker ]] || fail "the command ran: $marker exists"
    expect_run last refused 125
}

check "sandshim policy keys lists every documented key"
expect_exit 0 sandshim policy keys
for key in sandbox.{network,memory,cpus,pids,timeout,tmp_size,shm_size,nofile,nproc,user,hostname,workspace} \
    engine.{name,path,search_path,endpoint,tls_cert_path} env.{allow,deny} images.COMMAND \
    audit.{db,required,tail_bytes} hook.mode shim.dir; do
    grep -q "^$key " "$OUT" || fail "policy keys does not list $key"
done

check "bad values and unknown keys: 125, every problem with file:line in one line, nothing ran"
# raw, so the line numbers below are exact; the run stops at the policy, before any engine
printf '[sandbox]\nmemory = lots\nbogus = 1\n' >"$USER_CONFIG"
expect_exit 125 sandshim run --workspace rw -- "${would_mark[@]}"
expect_contains "sandshim: invalid policy: $USER_CONFIG:2: sandbox.memory = \"lots\": expected a size" "$ERR"
expect_contains "$USER_CONFIG:3: sandbox.bogus = \"1\": unknown key (see \`sandshim policy keys\`)" "$ERR"
expect_refused_nothing_ran
reset_user_config

check "SANDSHIM_CONFIG naming a missing file: 125, nothing ran"
SANDSHIM_CONFIG=$T/no-such-config expect_exit 125 sandshim run --workspace rw -- "${would_mark[@]}"
expect_contains "cannot read config file \"$T/no-such-config\"" "$ERR"
expect_refused_nothing_ran

check "a workspace file that loosens the network is refused, naming key and file"
printf '[sandbox]\nnetwork = bridge\n' >"$WS_CONFIG"
expect_exit 125 sandshim run --workspace rw -- "${would_mark[@]}"
expect_contains "$WS_CONFIG:2: sandbox.network = \"bridge\": would loosen the policy" "$ERR"
expect_refused_nothing_ran

check "a workspace file that raises the memory limit is refused, naming key and file"
printf '[sandbox]\nmemory = 4g\n' >"$WS_CONFIG"
expect_exit 125 sandshim run --workspace rw -- "${would_mark[@]}"
expect_contains "$WS_CONFIG:2: sandbox.memory = \"4g\": would loosen the policy" "$ERR"
expect_refused_nothing_ran

check "a workspace file may not choose images, engines, new env names or turn the audit off"
printf '[images]\npython = evil:latest\n[engine]\npath = /bin/true\n[env]\nallow = GITHUB_TOKEN\n[audit]\nrequired = false\n' >"$WS_CONFIG"
expect_exit 125 sandshim run --workspace rw -- "${would_mark[@]}"
expect_contains "$WS_CONFIG:2: images.python = \"evil:latest\"" "$ERR"
expect_contains "$WS_CONFIG:4: engine.path = \"/bin/true\"" "$ERR"
expect_contains "$WS_CONFIG:6: env.allow = \"GITHUB_TOKEN\"" "$ERR"
expect_contains "$WS_CONFIG:8: audit.required = \"false\"" "$ERR"
expect_refused_nothing_ran
rm "$WS_CONFIG"

check "control: the user's own config may loosen what a workspace may not (memory = 4g)"
printf '[sandbox]\nmemory = 4g\n' | write_user_config
expect_exit 0 sandshim run --dry-run -- sh -c true
expect_contains " --memory=4294967296 " "$OUT"
reset_user_config

check "a workspace file that tightens applies: memory = 128m, timeout = 1s"
printf '[sandbox]\nmemory = 128m\n' >"$WS_CONFIG"
expect_exit 0 sandshim run --dry-run -- sh -c true
expect_contains " --memory=134217728 " "$OUT"
printf '[sandbox]\ntimeout = 1s\n' >"$WS_CONFIG"
expect_exit 124 sandshim run -- sh -c 'sleep 3; exit 42'
expect_deadline_outcome "sh" 1s
expect_run last timeout 124
audit_field last policy_sources >"$T/sources"
expect_contains "$WS_CONFIG" "$T/sources"
rm "$WS_CONFIG"

check "control: without the workspace file the same command finishes"
expect_exit 42 sandshim run -- sh -c 'sleep 3; exit 42'

suite_done
