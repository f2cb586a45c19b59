#!/usr/bin/env bash
# sandshim-test-engines: docker  # podman + runsc: runs through sandshim exit 2 (open, see the report)
# sandshim-test-labels: gvisor
# A kernel of its own: sandbox.runtime = runsc runs the command on gVisor's kernel (its uname,
# not the host's) and a workspace file may choose it but never go back to runc; then the whole
# isolation suite runs again under runsc (SANDSHIM_TEST_RUNTIME), so every isolation property
# is proven on gVisor in both directions too. docker needs runsc registered
# (install/deps.sh --with-gvisor); podman takes /usr/bin/runsc as it is.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Opt-in (SANDSHIM_TEST_GVISOR=1): gVisor is optional (deps.sh --with-gvisor), and runs under runsc
# still end with exit 2 intermittently (a teardown race, open), so CI does not run this suite.
if [[ ${SANDSHIM_TEST_GVISOR:-0} != 1 ]]; then
    say "SKIP: gVisor suite is opt-in (SANDSHIM_TEST_GVISOR=1, after install/deps.sh --with-gvisor)"
    exit "$EXIT_SKIP"
fi
[[ -x /usr/bin/runsc ]] || skip_or_fail "no /usr/bin/runsc (install/deps.sh --with-gvisor)"
if [[ $ENGINE == docker ]] && ! "$ENGINE_CLIENT" info --format '{{json .Runtimes}}' | grep -q '"runsc-nonet"'; then
    skip_or_fail "runsc is not registered with docker (install/deps.sh --with-gvisor)"
fi
host_kernel=$(uname -r)

check "runc (default): the command sees the host's kernel"
expect_exit 0 sandshim run -- sh -c 'uname -r'
expect_file_is "$OUT" "$host_kernel"

check "runsc: the command sees gVisor's kernel, not the host's"
write_user_config <<<$'[sandbox]\nruntime = runsc'
expect_exit 0 sandshim run -- sh -c 'uname -r'
[[ -s $OUT && $(head -1 "$OUT") != "$host_kernel" ]] || fail "uname under runsc is the host's: $(cat "$OUT")"
expect_contains '"--runtime=runsc-nonet"' <(audit_field last engine_args)

check "runsc: a workspace file may choose it, and may not go back to runc"
reset_user_config
printf '[sandbox]\nruntime = runsc\n' >"$WS/.sandshim.conf"
expect_exit 0 sandshim run -- sh -c 'uname -r'
[[ $(cat "$OUT") != "$host_kernel" ]] || fail "the workspace's runtime = runsc did not apply"
write_user_config <<<$'[sandbox]\nruntime = runsc'
printf '[sandbox]\nruntime = runc\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- sh -c 'uname -r'
expect_contains "would loosen the policy (runsc -> runc)" "$ERR"
rm "$WS/.sandshim.conf"
reset_user_config

check "the isolation suite, under runsc"
started=$EPOCHREALTIME
SANDSHIM_TEST_RUNTIME=runsc bash "$(dirname "${BASH_SOURCE[0]}")/suite_isolation.sh" ||
    fail "the isolation suite fails under runsc (see above)"
say "isolation under runsc: $(($(ms_since "$started") / 1000))s"
suite_done
