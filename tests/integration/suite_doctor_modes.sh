#!/usr/bin/env bash
# sandshim doctor tells the truth in both modes, as root and as a user outside the docker group:
# in direct mode that user's engine line fails with the one-line fix; in broker mode the engine,
# the images and the audit are the broker's, asked through its read-only `status` verb, the
# broker's uid comes from SO_PEERCRED and is not the caller's, a caller still in the docker group
# is warned, and a required broker that is down fails with the fix. Needs root (users, broker).
# sandshim-test-engines: docker  # the broker's user reaches docker through the docker group
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

broker_suite_setup sandshim-doctor-nd
start_broker
broker_uid=$(id -u sandshim)

# A second caller, still in the docker group (as setup finds an installing user).
DG_USER=sandshim-doctor-dg
ensure_test_user "$DG_USER" || skip_or_fail "cannot create the test user $DG_USER"
DG=$T/dg
mkdir -p "$DG"
chown "$DG_USER:" "$DG"
broker_client_command "$DG_USER" "$DG"
dg_command=("${CLIENT_COMMAND[@]}")

# doctor's lines, which this suite asserts, and its exit status: 1, since every case has a fail
# line (at least the shims, not installed for these users), and a doctor that printed one and
# exited 0 would tell a script all is well. Sets OUT and ERR.
doctor() { # PREFIX... -- [VAR=VALUE...]
    local prefix=() rc=0
    while [[ $1 != -- ]]; do
        prefix+=("$1")
        shift
    done
    shift
    (cd "$T" && exec "${prefix[@]}" env "$@" "$T/bin/sandshim" doctor) >"$OUT" 2>"$ERR" </dev/null || rc=$?
    expect_equal 1 "$rc" "doctor's exit code (it printed a fail line)"
    grep -q '^fail  ' "$OUT" || fail "doctor printed no fail line: $(cat "$OUT")"
}
root_command=(env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 XDG_STATE_HOME="$XDG_STATE_HOME"
    XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME")

check "direct mode, root: the engine, the images and root's own audit, checked locally"
doctor "${root_command[@]}" -- SANDSHIM_BROKER=off
expect_contains "warn  mode     direct mode (broker.mode = off in \$SANDSHIM_BROKER): this uid reaches the rootful engine socket /var/run/docker.sock, which is root-equivalent" "$OUT"
expect_contains "ok    engine   docker " "$OUT"
expect_contains "ok    image    sandshim/python:bookworm (python, python3) present" "$OUT"
expect_contains "ok    audit    $XDG_STATE_HOME/sandshim/audit.db writable, chain verified" "$OUT"
expect_not_contains "broker   " "$OUT"

check "direct mode, a user outside the docker group: the engine fails with the one-line fix"
doctor "${nd_command[@]}" -- SANDSHIM_BROKER=off
expect_contains "ok    mode     direct mode (broker.mode = off in \$SANDSHIM_BROKER); this uid does not reach a rootful engine socket" "$OUT"
grep -F "fail  engine   docker (" "$OUT" >"$T/engine-line" || fail "no failing engine line: $(cat "$OUT")"
expect_contains "does not answer: " "$T/engine-line"
expect_contains "permission denied" "$T/engine-line"
expect_contains "; fix: this uid may not use the engine: run through the broker (\`sudo install/setup.sh\`, or the package's sandshim.socket), or, for a single user only, \`sudo usermod -aG docker \$USER\` (root-equivalent)" "$T/engine-line"
expect_lines 1 "$T/engine-line"

# The lines every broker-mode answer shares: the engine, each default image and the audit are
# the broker's, seen through it.
expect_broker_answer() { # CALLER-UID-AND-NAME
    expect_contains "ok    mode     broker mode: the broker at $SOCK runs every request" "$OUT"
    expect_contains "ok    broker   the broker at $SOCK runs as uid $broker_uid (sandshim), not yours ($1); sandshim " "$OUT"
    expect_contains "ok    engine   through the broker: docker " "$OUT"
    local image
    for image in "sandshim/python:bookworm (python, python3)" "sandshim/node:bookworm (node)" "sandshim/sh:bookworm (sh)"; do
        expect_contains "ok    image    $image present, through the broker" "$OUT"
    done
    expect_contains "ok    pool     " "$OUT"
    expect_contains "ok    audit    the broker's audit, through the broker: ${AUDIT_LINE:-ok: }" "$OUT"
    expect_not_contains "writable, chain verified" "$OUT" # no database of the caller's own
    expect_not_contains "runtime  " "$OUT"
}

check "broker mode, a user outside the docker group: engine, images and audit ok through the broker"
rm -rf "$U/.local/state/sandshim" # direct mode's own database, from the check above
doctor "${nd_command[@]}" --
# The broker's spare worker opened (made, keyed and anchored) its store before any request.
AUDIT_LINE="ok: 0 rows verified; chain head 0 hmac:" \
expect_broker_answer "uid $nd_uid ($ND_USER)"
expect_contains "ok    access   this uid cannot reach the engine around the broker" "$OUT"
[[ ! -e $U/.local/state/sandshim/audit.db ]] || fail "doctor created the caller's own audit database"

expect_exit 0 as_nd "$U" sh -c "exit 0" # one row of the caller's, so the chain has a link

check "broker mode, root: the same answers, through the broker"
doctor "${root_command[@]}" -- SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$SOCK"
expect_broker_answer "uid 0 (root)"
expect_contains "ok    access   root reaches the engine directly (root needs no broker)" "$OUT"

check "broker mode, a caller still in the docker group: warned, with the fix"
doctor "${dg_command[@]}" --
expect_broker_answer "uid $(id -u "$DG_USER") ($DG_USER)"
expect_contains "warn  access   this uid is a member of the group docker" "$OUT"
expect_contains ": it reaches the engine around the broker, which is root-equivalent on a rootful engine; fix: \`sudo gpasswd -d $DG_USER docker\`, then log in again" "$OUT"

check "the broker's audit as the caller sees it: a tampered chain fails through the broker"
# (As the broker's user, so that the database's WAL files stay the broker's.)
setpriv --reuid=sandshim --regid=sandshim --init-groups \
    sqlite3 "$BSTATE/audit.db" "UPDATE runs SET exit_code = 7 WHERE id = (SELECT max(id) FROM runs)"
doctor "${nd_command[@]}" --
expect_contains "fail  audit    the broker's audit, through the broker: FAILED (changed): " "$OUT"
expect_contains "; fix: \`sandshim audit verify\` names the row; tell the administrator (root)" "$OUT"

check "the pool's setting and what waits, as the broker sees it"
printf '\n[pool]\nsize = 1\n' >>"$SYSCONF" # read per request: no restart (and no run follows)
doctor "${nd_command[@]}" --
expect_contains "ok    pool     1 warm container(s) per image and workspace, growing to 4 under demand (back after 60 s without a draw), runs through the launcher, idle for at most 600 s; 0 waiting now" "$OUT"

check "a broker that runs as the caller's own uid is no boundary: fail"
mkdir -p "$T/root-broker"
env -i PATH=/usr/bin:/bin HOME="$T/root-broker" SANDSHIM_BROKER=off SANDSHIM_AUDIT_DB="$T/root-broker/audit.db" \
    "$T/bin/sandshim" broker --allow-root --socket "$T/root-broker/broker.sock" --system-config "$SYSCONF" \
    >"$T/root-broker/log" 2>&1 </dev/null &
root_broker=$!
BG_PIDS+=("$root_broker")
for ((i = 0; i < 100; i++)); do
    [[ -S $T/root-broker/broker.sock ]] && break
    sleep 0.05
done
[[ -S $T/root-broker/broker.sock ]] || fail "the root broker did not start: $(tail -n 5 "$T/root-broker/log")"
doctor "${root_command[@]}" -- SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$T/root-broker/broker.sock"
expect_contains "fail  broker   the broker at $T/root-broker/broker.sock runs as uid 0 (root), your own: your processes can trace it and use its engine; fix: run the broker as its own system user: \`sudo install/setup.sh\`, or the package's sandshim.socket" "$OUT"
kill "$root_broker"
wait "$root_broker" || true # ended by the signal

check "broker.mode = required and the broker is down: fail, naming the fix"
broker_stop_if_started
doctor "${nd_command[@]}" --
expect_contains "fail  mode     broker.mode = required (\$SANDSHIM_BROKER) but no broker answers at $SOCK: every run fails closed; fix: systemctl start sandshim.socket, or install/setup.sh" "$OUT"
expect_contains "fail  engine   not checked: broker.mode = required and no broker answers at $SOCK: every run fails closed; fix: systemctl start sandshim.socket, or install/setup.sh" "$OUT"
expect_not_contains "audit    " "$OUT"

suite_done
