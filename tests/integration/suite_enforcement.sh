#!/usr/bin/env bash
# Limits that cannot be enforced: rootful docker enforces memory, swap, cpus and pids, and the
# audit row says so; rootless podman on cgroup v1 (a non-root test user) accepts --pids-limit and
# drops it, so sandshim refuses to run there (125, one line, audit row `refused` naming the
# unenforced limits) unless the policy says limits.unenforced = accept. Both directions are shown
# on the real engines: docker stops a fork bomb at the pids limit, rootless podman does not.
# sandshim-test-engines: docker
# sandshim-test-alone: yes  # loads the whole machine or times it: no other test runs beside it in CI
# (docker only: the rootless podman part drives podman itself, as the test user)
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Starts 40 sleeps and exits 42; under a pids limit of 16 the shell cannot fork (dash exits 2).
forks='for i in $(seq 40); do sleep 3 & done; wait; exit 42'

check "rootful docker enforces every limit: the audit row records them as enforced"
expect_exit 42 sandshim run -- sh -c 'exit 42'
expect_run last error 42
expect_contains "enforced=memory,swap,cpus,pids" <(audit_field last limits)
expect_not_contains "unenforced" <(audit_field last limits)

check "control: docker really enforces the pids limit (40 forks under --pids 16 fail)"
expect_exit 2 sandshim run --pids 16 -- sh -c "$forks"
expect_contains "Cannot fork" "$ERR"

check "the verdict is cached: a second run does not ask the engine again"
cache_dir=$XDG_STATE_HOME/sandshim/engine-facts
[[ $(find "$cache_dir" -name '*.json' | wc -l) == 1 ]] || fail "expected one cached verdict in $cache_dir"
before=$(stat -c %Y.%i "$cache_dir"/*.json)
expect_exit 42 sandshim run -- sh -c 'exit 42'
expect_equal "$before" "$(stat -c %Y.%i "$cache_dir"/*.json)" "cache entry after a second run"

check "a forged cache entry for another engine identity is never believed"
"$HOST_PY" - "$cache_dir" <<'EOF'
import glob, json, sys
for path in glob.glob(sys.argv[1] + "/*.json"):
    entry = json.load(open(path))
    entry["identity"] = "v1 docker elsewhere"
    entry["facts"]["pids"] = False  # would make every run refused if it were read
    json.dump(entry, open(path, "w"))
EOF
expect_exit 42 sandshim run -- sh -c 'exit 42'
expect_contains "enforced=memory,swap,cpus,pids" <(audit_field last limits)

# ---------------------------------------------------------------------------------------------
# Rootless podman on cgroup v1, as a non-root user.

rootless_ready() {
    [[ ! -e /sys/fs/cgroup/cgroup.controllers ]] || {
        say "cgroup v2 host: rootless engines can enforce limits here; the cgroup v1 case does not arise"
        return 1
    }
    command -v podman >/dev/null || skip_or_fail "podman is not installed (install/deps.sh)"
    ensure_test_user sandshim-test || skip_or_fail "no test user (run the suite as root)"
    test_user_can_run sandshim-test "$SANDSHIM_BIN" ||
        skip_or_fail "the test user cannot execute $SANDSHIM_BIN (a checkout under a private directory)"
    grep -q '^sandshim-test:' /etc/subuid ||
        skip_or_fail "sandshim-test has no subordinate uids in /etc/subuid (rootless podman needs them)"
    command -v newuidmap >/dev/null || skip_or_fail "newuidmap is missing (Debian package uidmap)"
}

# Runs a command as the test user with a private HOME, runtime dir and sandshim state under $T,
# so its podman storage and sandshim's cache and audit are this suite's alone.
as_test_user() {
    runuser -u sandshim-test -- env -i HOME="$TU/home" USER=sandshim-test LOGNAME=sandshim-test \
        XDG_RUNTIME_DIR="$TU/run" SANDSHIM_CONFIG="$TU/config" SANDSHIM_AUDIT_DB="$TU/audit.db" \
        LANG=C.UTF-8 TZ=UTC PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# Rootless podman leaves a pause process (catatonit) per runtime directory: end ours, even when
# a check fails, before the harness's own cleanup.
stop_test_user_pause() {
    local pid
    pid=$(cat "$TU/run/libpod/tmp/pause.pid" 2>/dev/null) || return 0
    [[ $(ps -o uid= -p "$pid" 2>/dev/null | tr -d " ") == "$(id -u sandshim-test)" ]] && kill "$pid" 2>/dev/null
    return 0
}

stop_pause_then_cleanup() {
    local rc=$?
    stop_test_user_pause
    (exit "$rc")
    cleanup
}

if rootless_ready; then
    TU=$T/test-user
    trap stop_pause_then_cleanup EXIT
    mkdir -p "$TU/home" "$TU/run"
    chown -R sandshim-test: "$TU"
    chmod 700 "$TU/run"
    printf '[engine]\nname = podman\n' >"$TU/config"
    chmod 644 "$TU/config"

    check "control: rootless podman on cgroup v1 ignores --pids-limit (40 forks under a limit of 16 succeed)"
    cid=$("$DOCKER" create sandshim/sh:bookworm true)
    mkdir "$TU/home/rootfs"
    chown sandshim-test: "$TU/home/rootfs"
    "$DOCKER" export "$cid" | runuser -u sandshim-test -- tar -x -C "$TU/home/rootfs" 2>/dev/null || true
    "$DOCKER" rm "$cid" >/dev/null
    expect_exit 42 as_test_user podman run --rm --network none --pids-limit 16 \
        --rootfs "$TU/home/rootfs" sh -c "$forks"
    expect_contains "Resource limits are not supported and ignored on cgroups V1 rootless systems" "$ERR"

    check "sandshim refuses rootless podman on cgroup v1: 125, one line naming the limits and the fix, audit row"
    mkdir -p "$WS/rw"
    chmod 777 "$WS/rw"
    expect_exit 125 as_test_user "$SANDSHIM_BIN" run -- sh -c 'touch rw/marker; exit 42'
    expect_file_is "$ERR" "sandshim: podman cannot enforce the memory, swap, cpus and pids limits: rootless podman on cgroup v1 ignores resource limits; use a rootful engine, or a cgroup v2 host (systemd.unified_cgroup_hierarchy=1) with the controllers delegated; or set limits.unenforced = accept to run without them; nothing ran"
    [[ ! -e $WS/rw/marker ]] || fail "the command ran"
    as_test_user "$SANDSHIM_BIN" audit list --limit 1 --json --db "$TU/audit.db" >"$T/tu-row.json"
    "$HOST_PY" - "$T/tu-row.json" <<'EOF' || fail "the refused row: see above"
import json, sys
[row] = json.load(open(sys.argv[1]))
assert row["status"] == "refused" and row["exit_code"] == 125, row
assert row["limits"].endswith(" enforced= unenforced=memory,swap,cpus,pids"), row["limits"]
assert row["engine"] == "podman", row["engine"]
EOF

    check "sandshim doctor as the test user: the limits line fails with the fix"
    expect_exit 1 as_test_user "$SANDSHIM_BIN" doctor
    expect_contains "ok    engine   podman " "$OUT"
    expect_contains "rootless" "$OUT"
    expect_contains "fail  limits   not enforced: memory, swap, cpus, pids (rootless podman on cgroup v1 ignores resource limits); every run is refused; fix: use a rootful engine" "$OUT"

    check "limits.unenforced = accept: sandshim runs through rootless podman, the pids limit is really dropped, the row says so"
    # The image, copied into the test user's own podman storage (no registry is needed).
    "$DOCKER" save sandshim/sh:bookworm | as_test_user podman load -q >/dev/null 2>&1 ||
        fail "cannot load sandshim/sh:bookworm into the test user's podman storage"
    printf '[engine]\nname = podman\n[limits]\nunenforced = accept\n' >"$TU/config"
    # A long deadline: rootless podman on vfs storage copies the whole image for each container.
    expect_exit 42 as_test_user "$SANDSHIM_BIN" run --timeout 5m --pids 16 -- sh -c "$forks"
    expect_contains "sandshim: warning: running without the memory, swap, cpus, pids limits (limits.unenforced = accept): rootless podman on cgroup v1 ignores resource limits" "$ERR"
    as_test_user "$SANDSHIM_BIN" audit list --limit 1 --json --db "$TU/audit.db" >"$T/tu-row.json"
    "$HOST_PY" - "$T/tu-row.json" <<'EOF' || fail "the accepted row: see above"
import json, sys
[row] = json.load(open(sys.argv[1]))
assert row["status"] == "error" and row["exit_code"] == 42, row
assert row["limits"].endswith(" enforced= unenforced=memory,swap,cpus,pids"), row["limits"]
EOF

    check "a workspace file may tighten limits.unenforced back to refuse, never loosen it"
    printf '[limits]\nunenforced = refuse\n' >"$WS/.sandshim.conf"
    expect_exit 125 as_test_user "$SANDSHIM_BIN" run -- sh -c 'exit 42'
    expect_contains "podman cannot enforce" "$ERR"
    printf '[engine]\nname = podman\n' >"$TU/config"
    printf '[limits]\nunenforced = accept\n' >"$WS/.sandshim.conf"
    expect_exit 125 as_test_user "$SANDSHIM_BIN" run -- sh -c 'exit 42'
    expect_contains "limits.unenforced = \"accept\": would loosen the policy" "$ERR"
    rm "$WS/.sandshim.conf"
fi

suite_done
