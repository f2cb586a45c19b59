#!/usr/bin/env bash
# Workspace identity through the broker: the engine mounts the workspace by name, so a workspace
# renamed and replaced by a symlink (into a directory the caller cannot traverse) after the
# broker's check and before the engine's mount must not show that directory. The container's
# first program, sandshim-gate, compares what was mounted with the caller's held directory and
# refuses a mismatch (125, one line, a row). Proven by a swap done exactly in that window (the
# engine client waits for it) and by a free-running swapper raced against many runs; the control
# is direct mode, which has no gate: the same swap shows the secret there. Also: the broker's
# refusals before a run (a loosening user file, a refused workspace, a full queue) are rows the
# caller's own `sandshim audit` shows. Under sandbox.workspace = rw the names kept read-only are
# bound by name too: one linked out of the workspace is refused, one swapped for such a link after
# the broker's check is refused by the gate. Needs root (users, the broker as the system user).
# sandshim-test-engines: docker  # the broker's user reaches docker through the docker group
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox or by sh
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

broker_suite_setup sandshim-broker2-nd
make_locked_secret
readonly RACE_RUNS=${SANDSHIM_RACE_RUNS:-40}
readonly GATE_LINE="is not the caller's directory (renamed or replaced by a symlink while the run started); refusing it; nothing ran"

use_swap_window_engine
start_broker --max-runs-per-user 1 --max-queued-per-user 1

# The caller's workspace (a git root) and the program that shows what it sees there.
R=$U/race
mkdir -p "$R/ws/.git"
echo "the caller's own file" >"$R/ws/mine"
chown -R "$ND_USER:" "$R"
chmod 755 "$R" "$R/ws"
readonly SHOW='cat secret mine 2>/dev/null; exit 42'

# The swapper, as the test user: at each "go", renames DIR/NAME away and puts a symlink to the
# locked directory in its place, then says "done". One at a time (they share the fifo).
swap_on_request() { # [DIR NAME]
    local dir=${1:-$R} name=${2:-ws}
    (cd "$dir" && exec "${nd_command[@]}" /bin/sh -c 'while read -r _ <'"$T/fifos/go"'; do
        mv '"$name"' '"$name"'.real && ln -s '"$LOCKED/inside"' '"$name"'; echo done >'"$T/fifos/done"'; done') &
    SWAPPER=$!
    BG_PIDS+=("$SWAPPER")
}
stop_swapper() {
    kill "$SWAPPER" 2>/dev/null
    wait "$SWAPPER" 2>/dev/null || true # killed: its status is not the check
}
restore_swapped() { # [DIR NAME]
    local dir=${1:-$R} name=${2:-ws}
    if [[ -L $dir/$name ]]; then
        rm "$dir/$name" && mv "$dir/$name.real" "$dir/$name"
    fi
}
restore_workspace() { restore_swapped "$R" ws; }

check "control: without a swap the caller's run sees its own workspace"
expect_exit 42 as_nd "$R/ws" sh -c "$SHOW"
expect_file_is "$OUT" "the caller's own file"

check "a swap between the broker's check and the engine's mount is refused by the gate (125, one line, a row)"
swap_on_request
touch "$T/swap-now"
for i in 1 2 3; do
    expect_exit 125 as_nd "$R/ws" sh -c "$SHOW"
    restore_workspace
    expect_not_contains "the secret" "$OUT"
    expect_lines 1 "$ERR"
    expect_contains "$GATE_LINE" "$ERR"
    id=$(last_broker_run)
    expect_equal 125 "$(broker_row "$id" exit_code)" "exit code in the row of swap $i"
    expect_equal "$nd_uid" "$(broker_row "$id" uid)" "uid in the row of swap $i"
done

check "control: direct mode (no gate) with the same swap mounts the locked directory"
mkdir -p "$T/direct-config/sandshim"
printf '[engine]\npath = %s\napi = off\n' "$T/engine/docker" >"$T/direct-config/sandshim/config"
in_dir() { (cd "$1" && shift && exec "$@"); }
expect_exit 42 in_dir "$R/ws" env SANDSHIM_BROKER=off XDG_CONFIG_HOME="$T/direct-config" \
    "$T/bin/sandshim" run -- sh -c "$SHOW"
restore_workspace
expect_file_is "$OUT" "the secret"
rm "$T/swap-now"
stop_swapper

check "$RACE_RUNS runs raced against a swap at a random moment of their start: none sees the locked directory"
# Each run enters ws, then starts the shim while a background swap (as the caller) waits a random
# 0-400 ms and renames ws away, putting the symlink in its place: some swaps land before the
# broker's check, some between it and the engine's mount, some after the mount.
race_one='cd ws || exit 99
(sleep "$1"; mv ../ws ../ws.real && ln -s "$2" ../ws) &
rc=0
sh -c "$3" || rc=$?
wait
exit "$rc"'
# (A swap that lands between the engine's create and start can leave the engine client waiting:
# the user's tighter timeout bounds it.)
printf '[sandbox]\ntimeout = 5s\n' >"$U/.config/sandshim/config"
declare -A outcomes=()
for ((i = 0; i < RACE_RUNS; i++)); do
    rc=0
    as_nd "$R" /bin/bash -c "$race_one" race "0.$(printf %03d $((RANDOM % 400)))" "$LOCKED/inside" "$SHOW" \
        >"$T/race.out" 2>"$T/race.err" || rc=$?
    restore_workspace
    case $rc in
    42) outcome=ran-in-its-workspace ;;
    125) outcome=$(grep -q "$GATE_LINE" "$T/race.err" && echo refused-by-the-gate || echo refused-before-the-engine) ;;
    *) outcome=other-$rc && say "  run $i: exit $rc: $(head -c 300 "$T/race.err")" ;;
    esac
    if grep -q "the secret" "$T/race.out"; then outcome=SAW-THE-SECRET; fi
    outcomes[$outcome]=$((${outcomes[$outcome]:-0} + 1))
done
rm "$U/.config/sandshim/config"
for outcome in "${!outcomes[@]}"; do say "  $outcome: ${outcomes[$outcome]}"; done
expect_equal 0 "${outcomes[SAW-THE-SECRET]:-0}" "runs that saw the locked directory"
# The control that the race does swap in the window: the gate refused some runs.
((${outcomes[refused-by-the-gate]:-0} > 0)) || fail "control: no swap landed between the broker's check and the mount"

check "the broker's refusals before a run are rows the caller's own sandshim audit shows"
my_refusals() { # -> the caller's refused rows, as its own `sandshim audit` lists them
    as_nd "$R/ws" "$T/bin/sandshim" audit list --status refused --json --limit 1000 |
        "$HOST_PY" -c 'import json, sys; rows = json.load(sys.stdin)
print(len(rows), *sorted({r["uid"] for r in rows}))'
}
before=$(my_refusals)
printf '[sandbox]\nnetwork = bridge\n' >"$U/.config/sandshim/config"
expect_exit 125 as_nd "$R/ws" sh -c 'exit 42'
rm "$U/.config/sandshim/config"
expect_exit 125 as_nd /run sh -c 'exit 42'
expect_lines 1 "$ERR"
expect_contains "system directories (/run, /var/run, /proc, /sys, /dev) are never a workspace" "$ERR"
# One run holds the caller's only slot and one waits in its queue of one: one more is refused.
start_nd() { # OUTFILE CMD...
    local out=$1
    shift
    (cd "$R/ws" && exec "${nd_command[@]}" "$@") >"$out.out" 2>"$out.err" </dev/null &
    BG_PIDS+=($!)
}
start_nd "$T/holder" sh -c 'sleep 30'
holder=$!
for ((i = 0; i < 100; i++)); do
    [[ $(broker_audit list --status running --json) == "[]" ]] || break
    sleep 0.1
done
start_nd "$T/second" sh -c 'exit 0'
second=$!
start_nd "$T/third" sh -c 'exit 0'
third=$!
# The refused one ends at once (whichever came last), the queued one after the holder.
while kill -0 "$second" 2>/dev/null && kill -0 "$third" 2>/dev/null; do sleep 0.1; done
kill -TERM "$holder"
rc_second=0 rc_third=0
wait "$second" || rc_second=$?
wait "$third" || rc_third=$?
wait "$holder" 2>/dev/null || true
expect_equal "0 125" "$(printf '%s\n' "$rc_second" "$rc_third" | sort -n | tr '\n' ' ' | sed 's/ $//')" \
    "exit codes of the queued and the refused request"
cat "$T/second.err" "$T/third.err" >"$ERR"
expect_contains "(--max-queued-per-user); retry later; nothing ran" "$ERR"
read -r count_before _ <<<"$before"
expect_equal "$((count_before + 3)) $nd_uid" "$(my_refusals)" "refused rows the caller sees (count, uids)"

# sandbox.workspace = rw: the names that stay read-only (agent settings, hook files) are covered
# by the broker's own copies, made beneath the caller's held workspace (a link out of it refuses
# the run); the engine mounts each at its name, following a link there, so a swap after the
# broker's check only moves the broker's copy, never brings the caller's files or a locked one.
printf '[sandbox]\nworkspace = rw\n' >>"$SYSCONF"
readonly LINKED="cat '$LOCKED/inside/secret' 2>/dev/null; exit 42"

check "workspace = rw through the broker: a read-only name linked out of the workspace refuses the run (125, one line); a link inside it runs"
ln -s "$LOCKED/inside" "$R/ws/.claude"
chown -h "$ND_USER:" "$R/ws/.claude"
expect_exit 125 as_nd "$R/ws" sh -c "$LINKED"
expect_not_contains "the secret" "$OUT"
expect_lines 1 "$ERR"
expect_contains "the workspace's .claude leads out of the workspace (a symbolic link)" "$ERR"
expect_equal 125 "$(broker_row "$(last_broker_run)" exit_code)" "exit code in the refusal's row"
rm "$R/ws/.claude"
ln -s mine "$R/ws/CLAUDE.md"
chown -h "$ND_USER:" "$R/ws/CLAUDE.md"
expect_exit 42 as_nd "$R/ws" sh -c 'echo made >written; cat CLAUDE.md; exit 42'
expect_file_is "$OUT" "the caller's own file"
expect_file_is "$R/ws/written" "made"
rm "$R/ws/CLAUDE.md" "$R/ws/written"

check "workspace = rw through the broker: a read-only name swapped for a link after the broker's check moves only the broker's copy"
mkdir "$R/ws/.claude"
echo "the caller's setting" >"$R/ws/.claude/setting"
chown -R "$ND_USER:" "$R/ws/.claude"
swap_on_request "$R/ws" .claude
touch "$T/swap-now"
expect_exit 42 as_nd "$R/ws" sh -c "cat '$LOCKED/inside/setting' .claude/setting; $LINKED"
restore_swapped "$R/ws" .claude
expect_not_contains "the secret" "$OUT"
expect_equal "the caller's setting
the caller's setting" "$(cat "$OUT")" "what the run saw where the link led, and at .claude"

check "control: direct mode (no gate) with the same swap mounts the locked directory"
printf '[sandbox]\nworkspace = rw\n' >>"$T/direct-config/sandshim/config"
expect_exit 42 in_dir "$R/ws" env SANDSHIM_BROKER=off XDG_CONFIG_HOME="$T/direct-config" \
    "$T/bin/sandshim" run -- sh -c "$LINKED"
restore_swapped "$R/ws" .claude
expect_file_is "$OUT" "the secret"
rm "$T/swap-now"
stop_swapper

suite_done
