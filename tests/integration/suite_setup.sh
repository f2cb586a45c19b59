#!/usr/bin/env bash
# install/broker_setup.sh and install/uninstall.sh against a temporary root (--root): the system
# file says broker.mode = required with the warm pool on (launcher), the broker runs from the
# init script with its socket and launch directory on a tmpfs, survives a simulated reboot (its
# process gone, the tmpfs unmounted, the init script started again), serves a python of a user
# that set-up took out of the docker group, warm through the launcher; a re-run changes nothing;
# uninstall puts the user back, stops the broker, unmounts, and leaves no file of set-up's. Needs
# root (gpasswd, mount, the broker's user). The broker's audit and anchor are the root's own.
# sandshim-test-engines: docker  # the broker's user reaches docker through the docker group
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$SOURCE_DIR/install/lib/broker.sh"
. "$SOURCE_DIR/install/lib/testuser.sh"

readonly TEST_USER=sandshim-setup-t
[[ $(id -u) == 0 ]] || skip_or_fail "needs root (gpasswd, mount, the broker's user)"
command -v gpasswd >/dev/null || skip_or_fail "gpasswd is missing (Debian package passwd)"
ensure_test_user "$TEST_USER" || skip_or_fail "cannot create the test user $TEST_USER"
broker_ensure_user || skip_or_fail "cannot create the broker's user"

R=$T/root
INIT=$R/etc/init.d/sandshim
SOCK=$R/run/sandshim/broker.sock
RECORD=$R/etc/sandshim/setup.record
mkdir -p "$R"
chmod 755 "$R"
SWS=$T/ws
UHOME=$T/user-home # the workspace is never the caller's home
mkdir -p "$SWS" "$UHOME"
chown "$TEST_USER:" "$SWS" "$UHOME"
AUDIT_DBS+=("$R/var/lib/sandshim/audit.db")

undo_then_cleanup() {
    local rc=$?
    set +e
    trap - ERR # each step below may find nothing to undo
    [[ ! -x $INIT ]] || "$INIT" stop >/dev/null 2>&1
    ! mountpoint -q "$R/run/sandshim" || umount "$R/run/sandshim"
    # The broker's idle warm containers (never runs, so not in the audit lib.sh's cleanup reads).
    docker ps -aq --filter label=org.sandshim.pool --filter "volume=$SWS" | xargs -r docker rm -f >/dev/null 2>&1
    chattr -a "$R/var/log/sandshim/anchor.log" 2>/dev/null
    id -nG "$TEST_USER" | tr ' ' '\n' | grep -qx docker || usermod -aG docker "$TEST_USER"
    (exit "$rc")
    cleanup
}
trap undo_then_cleanup EXIT

# python as the test user through the root's broker, in the workspace.
as_user() { # CMD...
    (cd "$SWS" && exec setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups \
        env -i PATH=/usr/bin:/bin HOME="$UHOME" LANG=C.UTF-8 SANDSHIM_BROKER=required \
        SANDSHIM_BROKER_SOCKET="$SOCK" "$R/usr/local/bin/sandshim" "$@")
}
broker_audit() { "$SANDSHIM_BIN" audit "$@" --db "$R/var/lib/sandshim/audit.db"; }
last_engine_args() {
    local id
    id=$(broker_audit list --limit 1 --json | "$HOST_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')
    broker_audit show "$id" --json | "$HOST_PY" -c 'import json, sys
v = json.load(sys.stdin)["engine_args"]
print(v if isinstance(v, str) else json.dumps(v))'
}
on_tmpfs() { [[ $(stat -f -c %T "$1") == tmpfs ]]; }
wait_idle_warm() {
    local deadline=$((SECONDS + 60))
    until [[ -n $(docker ps -q --filter label=org.sandshim.pool --filter "volume=$SWS") ]]; do
        ((SECONDS < deadline)) || fail "no warm container within 60s; broker log: $(tail -n 5 "$R/var/lib/sandshim/broker.log")"
        sleep 0.2
    done
    sleep 1 # the launcher's socket
}

check "control: $TEST_USER starts in the docker group"
id -nG "$TEST_USER" | tr ' ' '\n' | grep -qx docker || fail "ensure_test_user did not add $TEST_USER to docker"

check "broker_setup.sh --root: one line for the user it takes out of the docker group"
# --keep-docker-group: SUDO_USER (a developer's sudo) stays where it is; only the named user goes.
expect_exit 0 bash "$SOURCE_DIR/install/broker_setup.sh" --root "$R" --keep-docker-group \
    --remove-from-docker-group "$TEST_USER" "$SANDSHIM_BIN"
expect_contains "removed $TEST_USER from the docker group (gpasswd -d $TEST_USER docker;" "$ERR"
! id -nG "$TEST_USER" | tr ' ' '\n' | grep -qx docker || fail "$TEST_USER is still in the docker group"

check "the system file: broker.mode = required, the pool on with the launcher, the broker's keyed audit"
CONF=$R/etc/sandshim/config
for line in "mode = required" "size = 1" "start = launcher" "key_file = $R/var/lib/sandshim/keys/chain.key" \
    "anchor_file = $R/var/log/sandshim/anchor.log"; do
    grep -qxF "$line" "$CONF" || fail "$CONF lacks '$line': $(cat "$CONF")"
done
expect_equal "root 644" "$(stat -c '%U %a' "$CONF")" "owner and mode of $CONF"
for line in "docker-group $TEST_USER" "init-script $INIT" "tmpfs $R/run/sandshim" "file $R/usr/local/bin/sandshim"; do
    grep -qxF "$line" "$RECORD" || fail "the record lacks '$line': $(cat "$RECORD")"
done

check "the broker runs from the init script, its socket and launch directory on a tmpfs"
expect_exit 0 "$INIT" status
on_tmpfs "$R/run/sandshim" || fail "$R/run/sandshim is not on a tmpfs"
[[ -S $SOCK ]] || fail "no socket at $SOCK"
expect_not_contains "go through exec" "$R/var/lib/sandshim/broker.log"

check "python of a user outside the docker group runs through the broker; the second run is warm, launched"
expect_exit 0 as_user run -- python -c 'import os, socket; print(os.getuid(), socket.gethostname())'
expect_file_is "$OUT" "$(id -u "$TEST_USER") sandbox"
wait_idle_warm
expect_exit 0 as_user run -- python -c 'print("warm")'
expect_file_is "$OUT" "warm"
last_engine_args >"$T/engine_args"
expect_contains '"launch"' "$T/engine_args"

check "a simulated reboot: broker gone, tmpfs unmounted; the init script brings both back"
"$INIT" stop
umount "$R/run/sandshim"
expect_exit 3 "$INIT" status
expect_exit 0 "$INIT" start
on_tmpfs "$R/run/sandshim" || fail "start did not mount the tmpfs again"
expect_exit 0 as_user run -- python -c 'print("after the reboot")'
expect_file_is "$OUT" "after the reboot"

check "a re-run keeps the file it wrote, adds no record line, starts the broker anew"
cp "$RECORD" "$T/record.before"
expect_exit 0 bash "$SOURCE_DIR/install/broker_setup.sh" --root "$R" --keep-docker-group "$SANDSHIM_BIN"
cmp "$T/record.before" "$RECORD" || fail "the record changed: $(diff "$T/record.before" "$RECORD")"
expect_exit 0 "$INIT" status

check "an administrator's file is left alone, with a warning"
printf '[sandbox]\ntimeout = 1m\n' >>"$CONF"
expect_exit 0 bash "$SOURCE_DIR/install/broker_setup.sh" --root "$R" --keep-docker-group "$SANDSHIM_BIN"
grep -qxF "timeout = 1m" "$CONF" || fail "set-up rewrote the administrator's file"

check "uninstall.sh: the user back in the docker group, the broker stopped, set-up's files gone"
docker ps -aq --filter label=org.sandshim.pool --filter "volume=$SWS" | xargs -r docker rm -f >/dev/null 2>&1
# The invoking user's shims: links to the installed binary (dangling once it goes), and another.
mkdir -p "$XDG_DATA_HOME/sandshim/bin"
ln -sf "$R/usr/local/bin/sandshim" "$XDG_DATA_HOME/sandshim/bin/python3"
ln -sf /bin/true "$XDG_DATA_HOME/sandshim/bin/ruby"
expect_exit 0 bash "$SOURCE_DIR/install/uninstall.sh" --root "$R" --purge
expect_contains "removed $(id -un)'s shim links to the removed binary in $XDG_DATA_HOME/sandshim/bin (1)" "$ERR"
[[ ! -L $XDG_DATA_HOME/sandshim/bin/python3 && -L $XDG_DATA_HOME/sandshim/bin/ruby ]] ||
    fail "uninstall left the dangling shim or removed another link: $(ls -la "$XDG_DATA_HOME/sandshim/bin")"
expect_contains "put $TEST_USER back into the docker group" "$ERR"
expect_contains "kept $CONF: changed since set-up wrote it" "$ERR"
id -nG "$TEST_USER" | tr ' ' '\n' | grep -qx docker || fail "$TEST_USER is not back in the docker group"
! mountpoint -q "$R/run/sandshim" || fail "the tmpfs is still mounted"
for path in "$INIT" "$RECORD" "$R/usr/local/bin/sandshim" "$R/usr/local/libexec/sandshim/sandshim-gate" "$R/var/lib/sandshim"; do
    [[ ! -e $path ]] || fail "$path is left"
done
[[ ! -S $SOCK ]] || ! as_user run -- true 2>/dev/null || fail "a broker still answers"

suite_done
