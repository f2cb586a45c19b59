#!/usr/bin/env bash
# An ordinary caller: the sandbox runs as the caller's uid:gid (root maps to 65534); a workspace
# the sandbox user cannot read is refused up front with the fix; a caller who may not use the
# engine socket gets 125 and one line. Needs root to create the test user.
# sandshim-test-engines: docker  # the test user reaches docker through the docker group; as that
# user podman is rootless podman, another engine (its own image store, and no limits on cgroup v1)
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly TEST_USER=sandshim-test

[[ $(id -u) == 0 ]] || skip_or_fail "needs root to create the test user $TEST_USER"
ensure_test_user "$TEST_USER" || skip_or_fail "cannot create the test user $TEST_USER"
test_uid=$(id -u "$TEST_USER")
test_gid=$(id -g "$TEST_USER")

# The binary where the test user can run it (a build under /root may be out of its reach).
mkdir -p "$T/bin"
cp "$SANDSHIM_BIN" "$T/bin/sandshim"
chmod 755 "$T/bin" "$T/bin/sandshim"
test_user_can_run "$TEST_USER" "$T/bin/sandshim" || fail "$TEST_USER cannot run $T/bin/sandshim"

# The test user's own state, config and workspace (mode 700: only it can read it).
U=$T/user
mkdir -p "$U/config" "$U/state" "$U/data"
UWS=$U/ws
mkdir -p "$UWS/rw"
git -C "$UWS" init -q
chown -R "$TEST_USER:" "$U"
chmod 700 "$UWS"
AUDIT_DBS+=("$U/state/audit.db")

# Runs the copied binary as the test user, in DIR, with its own XDG dirs and audit database.
as_test_user() { # DIR CMD-ARGS...
    local dir=$1
    shift
    (cd "$dir" && run_as_test_user "$TEST_USER" env XDG_CONFIG_HOME="$U/config" XDG_STATE_HOME="$U/state" \
        XDG_DATA_HOME="$U/data" SANDSHIM_AUDIT_DB="$U/state/audit.db" "$@")
}

check "as $TEST_USER (uid $test_uid), the sandbox runs as that uid:gid, in its own mode-700 workspace"
expect_exit 0 as_test_user "$UWS" "$T/bin/sandshim" run -- sh -c 'echo "$(id -u):$(id -g)"; ls -d .'
expect_file_is "$OUT" "$(printf '%s\n.' "$test_uid:$test_gid")"
expect_equal "$test_uid" "$("$SANDSHIM_BIN" audit show "$(
    "$SANDSHIM_BIN" audit list --limit 1 --json --db "$U/state/audit.db" |
        "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])'
)" --json --db "$U/state/audit.db" | "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)["uid"])')" \
    "uid in the audit row"

check "as $TEST_USER, the sandbox user can write through --workspace rw, as the owner"
expect_exit 42 as_test_user "$UWS" "$T/bin/sandshim" run --workspace rw -- sh -c 'touch rw/mine && exit 42'
expect_equal "$TEST_USER" "$(stat -c %U "$UWS/rw/mine")" "owner of a file the sandbox wrote"

check "a mode-700 workspace owned by another user is refused with the fix (125), nothing runs"
ws700=$(new_workspace)
chmod 700 "$ws700"
if [[ $(id -u) == 0 ]]; then sandbox_user=65534:65534; else sandbox_user=$(id -u):$(id -g); fi
(cd "$ws700" && expect_exit 125 sandshim run -- sh -c 'exit 42')
expect_file_is "$ERR" "sandshim: the sandbox user $sandbox_user cannot read the workspace \"$ws700\" (stopped at \"$ws700\"); make it readable, e.g. \`chmod o+rx $ws700\`, or set sandbox.user; nothing ran"
expect_run last refused 125

check "control: the same workspace made readable (chmod o+rx) runs"
chmod o+rx "$ws700"
(cd "$ws700" && expect_exit 42 sandshim run -- sh -c 'exit 42')

check "a caller who may not use the engine socket: 125, one line with the fix, nothing ran"
# The test user without its supplementary groups (docker among them).
without_groups() {
    (cd "$UWS" && setpriv --reuid="$test_uid" --regid="$test_gid" --clear-groups \
        env HOME="$U" XDG_CONFIG_HOME="$U/config" XDG_STATE_HOME="$U/state" XDG_DATA_HOME="$U/data" \
        SANDSHIM_AUDIT_DB="$U/state/audit.db" "$@")
}
! without_groups docker version >/dev/null 2>&1 || fail "control: the test user reaches the engine without the docker group"
expect_exit 125 without_groups "$T/bin/sandshim" run --workspace rw -- sh -c 'touch rw/marker; exit 42'
expect_lines 1 "$ERR"
expect_contains "you may not use the engine socket" "$ERR" # the permission kind, from the API (typed) or the client (its line)
expect_contains "sudo usermod -aG docker" "$ERR"
[[ ! -e $UWS/rw/marker ]] || fail "the command ran without access to the engine"

# Wrap mode's shell (`sandshim -c`, Claude Code's CLAUDE_CODE_SHELL_PREFIX) under the default
# sandbox.workspace = wrap: the agent's whole command writes the workspace and git commits there;
# python3 by name keeps it read-only; the audit row counts what the run changed.
user_audit_field() { SANDSHIM_AUDIT_DB=$U/state/audit.db audit_field last "$1"; }
check "as $TEST_USER, wrap mode's shell writes the workspace and commits with the default config"
expect_exit 0 as_test_user "$UWS" "$T/bin/sandshim" -c \
    'echo wrapped > wrapped.txt && git add wrapped.txt && git -c user.name=t -c user.email=t@example.invalid commit -qm wrapped && git status --short wrapped.txt | wc -l'
expect_file_is "$OUT" 0
expect_file_is "$UWS/wrapped.txt" wrapped
expect_equal wrapped "$(run_as_test_user "$TEST_USER" git -C "$UWS" log -1 --format=%s)" "the commit on the host"
expect_equal wrapped.txt "$(run_as_test_user "$TEST_USER" git -C "$UWS" ls-files wrapped.txt)" "the host's index"
expect_contains '"wrapped.txt"' <(user_audit_field changed_paths)
[[ $(user_audit_field changed_count) -ge 1 ]] || fail "changed_count: $(user_audit_field changed_count)"

check "as $TEST_USER, python3 by name keeps the workspace read-only under the same default"
expect_exit 1 as_test_user "$UWS" "$T/bin/sandshim" run -- python3 -c "open('py.txt', 'w')"
expect_contains "Read-only file system" "$ERR"
[[ ! -e $UWS/py.txt ]] || fail "python3 by name wrote the workspace"
expect_equal null "$(user_audit_field changed_count)" "changed_count of a read-only run"

check "a project's .sandshim.conf may keep wrap mode's shell read-only too"
printf '[sandbox]\nworkspace = ro\n' >"$UWS/.sandshim.conf"
chown "$TEST_USER:" "$UWS/.sandshim.conf"
expect_exit 1 as_test_user "$UWS" "$T/bin/sandshim" -c 'echo no > tightened.txt'
expect_contains "Read-only file system" "$ERR"
[[ ! -e $UWS/tightened.txt ]] || fail "the shell wrote the workspace its .sandshim.conf keeps read-only"
rm -f "$UWS/.sandshim.conf"

suite_done
