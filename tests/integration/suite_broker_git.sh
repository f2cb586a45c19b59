#!/usr/bin/env bash
# git's own writes under sandbox.workspace = rw through the broker, for a caller outside the
# docker group. The run's .git is a stage of the broker's own (its state directory, 0700): the
# broker copies .git's top-level files into it beneath the caller's held workspace, binds .git's
# directories by name at a fixed place (/.sandshim/git; objects, refs, logs writable) that the
# stage links to, and the gate checks inside the container that the stage and each of them are
# what the broker found. The agent's settings and hook files are the broker's read-only copies. After the run the broker
# hands the changed state files to the client as read-only descriptors, and the client, as the
# caller, carries those in git's shape to the host's .git; config, commondir, a bent HEAD stay
# in the sandbox, named. Attacks: .git swapped for a link (to the gate's directory, to a locked
# repository) while the run starts; a link at .git from the start; an unremovable directory left
# in the stage. Needs root (users, the broker as the system user).
# sandshim-test-engines: docker  # the broker's user reaches docker through the docker group
# shellcheck disable=SC2016 # single-quoted scripts run inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

broker_suite_setup sandshim-brokergit-nd $'[sandbox]\nworkspace = rw\n[images]\nbash = sandshim/wrap:bookworm\n'
make_locked_secret

use_swap_window_engine
start_broker

# The caller's repository and identity, made as the caller.
G=$U/gitws
as_caller() { (cd "$G" && exec setpriv --reuid="$nd_uid" --regid="$nd_gid" --init-groups env -i \
    PATH=/usr/bin:/bin HOME="$U" LANG=C.UTF-8 "$@"); }
mkdir -p "$G"
chown "$ND_USER:" "$G"
chmod 755 "$G"
as_caller git config --global user.name "Caller Dev"
as_caller git config --global user.email caller@example.com
as_caller sh -c 'git init -q && echo one >f && git add f && git commit -qm one'
base=$(as_caller git symbolic-ref --short HEAD)
wrap() { as_nd "$G" "$T/bin/sandshim" -c "$1"; }
# CMD with stdout in $OUT and stderr in $ERR, its exit code in RC (the checks follow).
run_recorded() {
    RC=0
    "$@" >"$OUT" 2>"$ERR" </dev/null || RC=$?
}

check "a caller outside the docker group commits, branches and stashes in the box; git on the host sees it"
expect_exit 0 wrap 'echo two >>f && git commit -qam two && git checkout -qb topic && echo three >>f && git stash -q && git status --short'
expect_equal "two Caller Dev" "$(as_caller git log -1 --format='%s %an' "$base")" "the run's commit on the host, by the caller's identity"
expect_equal refs/heads/topic "$(as_caller git symbolic-ref HEAD)" "the host's branch after the run's checkout -b"
expect_equal "" "$(as_caller git status --porcelain)" "the stash left index and work tree clean"
as_caller git stash list | grep -q "WIP on topic" || fail "no stash on the host after the run's git stash"
as_caller git fsck --no-dangling || fail "git fsck after the run's writes"
expect_equal "$ND_USER" "$(stat -c %U "$G/.git/index")" "the index's owner on the host (the caller, not the broker)"
row=$(last_broker_run)
expect_contains "handed to the caller to carry to the host's .git: " <(broker_row "$row" message)
expect_equal 0 "$(broker_row "$row" exit_code)" "exit code in the row"

check "the stage is the broker's: the caller cannot reach it on the host"
stage_root=$BSTATE/state/sandshim/git-stage
expect_equal "700 sandshim" "$(stat -c '%a %U' "$stage_root")" "the stages' directory"
if as_caller ls "$stage_root" >/dev/null 2>&1; then fail "the caller lists the broker's stages"; fi

# The stage is writable by the broker's group, which is the run's processes' own and which the
# caller's lack: so the caller's processes reach a container of theirs through /proc/PID/root no
# more (the kernel asks for the same gids), nor write the stage there.
container_pid_of() { # WORKSPACE -> the pid (on the host) of the init of a container binding it
    local id
    for ((i = 0; i < 100; i++)); do
        id=$("$DOCKER" ps -q --filter "volume=$1" | head -n 1)
        [[ -n $id ]] && break
        sleep 0.1
    done
    [[ -n $id ]] || fail "no container of $1 appeared"
    "$DOCKER" inspect --format '{{.State.Pid}}' "$id"
}
expect_cannot_plant() { # PID: the caller reaches neither the container's workspace nor the stage
    local root=/proc/$1/root
    as_run_identity ls "$root$G/f" >/dev/null || fail "control: the run's own uid and gid do not reach its container's workspace through $root"
    if as_caller ls "$root$G/f" >/dev/null 2>&1; then fail "the caller reaches its container through $root"; fi
    if as_caller sh -c 'echo x >"$1"' _ "$root$G/.git/planted" 2>/dev/null; then
        fail "the caller wrote into the stage through $root"
    fi
    if as_caller ls "$root$G/.git/" >/dev/null 2>&1; then fail "the caller lists the stage through $root"; fi
}

check "the caller's processes on the host cannot write the stage through their running container; the run's own can"
rm -f "$T/cold.done"
(run_recorded wrap 'sleep 3; echo in-the-run >.git/written-by-the-run && cat .git/written-by-the-run'; echo "$RC" >"$T/cold.done") &
BG_PIDS+=($!)
expect_cannot_plant "$(container_pid_of "$G")"
wait_until 30 "the cold run's end" test -s "$T/cold.done"
expect_equal 0 "$(cat "$T/cold.done")" "exit code of the run that wrote its stage"
expect_file_is "$OUT" "in-the-run"
[[ ! -e $G/.git/written-by-the-run ]] || fail "a file the run wrote at .git's top reached the host"

check "what steers git on the host (config, commondir, a bent HEAD, a linked ORIG_HEAD, a reflog link, hooks) stays in the sandbox"
expect_exit 0 wrap 'git config core.fsmonitor "touch pwned"; printf "%s\n" "$PWD/evil" >.git/commondir; echo "ref: refs/heads/../../x" >.git/HEAD; ln -sf /etc/passwd .git/ORIG_HEAD; ln -sf "$PWD/f" .git/logs/HEAD; true'
for piece in ".git/ORIG_HEAD" ".git/commondir" ".git/config" ".git/HEAD (not in git's shape)" \
    "removed from the host's .git (a link or fifo git would write through): logs/HEAD"; do
    expect_contains "$piece" "$ERR"
done
[[ ! -e $G/.git/commondir ]] || fail "the run's .git/commondir reached the host"
[[ ! -L $G/.git/logs/HEAD ]] || fail "the run's link at .git/logs/HEAD stayed for git on the host"
if as_caller git config core.fsmonitor; then fail "the run's core.fsmonitor reached the host's .git/config"; fi
expect_equal refs/heads/topic "$(as_caller git symbolic-ref HEAD)" "the host's HEAD after a bent one"
as_caller git status >/dev/null && [[ ! -e $G/pwned ]] || fail "git on the host ran what the sandbox configured"
expect_contains "left in the sandbox" <(broker_row "$(last_broker_run)" message)
expect_exit 73 wrap 'echo x >.git/hooks/pre-commit && exit 42 || exit 73'
[[ ! -e $G/.git/hooks/pre-commit ]] || fail "a run wrote a git hook through the broker's stage"

check "a name that steers the host, created by a run (.envrc, .claude/settings.json, a CLAUDE.md in place of its link): the caller's client moves it aside and makes the link again, as the caller"
rm -rf "$G/.envrc" "$G/.claude" "$G"/.envrc.sandshim-* "$G"/.claude.sandshim-*
expect_exit 0 wrap 'echo "touch pwned" >.envrc && mkdir .claude && echo "{}" >.claude/settings.json'
[[ ! -e $G/.envrc && ! -e $G/.claude ]] || fail "the created names stayed where the host reads them"
aside=$(cd "$G" && echo .envrc.sandshim-*)
[[ -f $G/$aside ]] || fail "no .envrc.sandshim-RUN_ID beside the workspace's root"
expect_equal "$ND_USER" "$(stat -c %U "$G/$aside")" "the moved file's owner (the caller's client moved it)"
[[ -d $(echo "$G"/.claude.sandshim-*) ]] || fail "no .claude.sandshim-RUN_ID"
expect_contains "created .envrc, moved to $aside" "$ERR"
expect_contains "created .envrc, which its client moves to $aside" <(broker_row "$(last_broker_run)" message)
rm -rf "$G/$aside" "$G"/.claude.sandshim-*
echo rules >"$G/AGENTS.md"
ln -s AGENTS.md "$G/CLAUDE.md"
chown -h "$ND_USER:" "$G/AGENTS.md" "$G/CLAUDE.md"
expect_exit 0 wrap 'rm CLAUDE.md && echo injected >CLAUDE.md'
[[ -L $G/CLAUDE.md && $(readlink "$G/CLAUDE.md") == AGENTS.md ]] || fail "CLAUDE.md is not the link it was after a run replaced it: $(ls -l "$G/CLAUDE.md" 2>&1)"
[[ $(stat -c %U "$G/CLAUDE.md") == "$ND_USER" ]] || fail "the link made again is not the caller's: $(stat -c %U "$G/CLAUDE.md")"
expect_equal injected "$(cat "$G"/CLAUDE.md.sandshim-*)" "the run's CLAUDE.md, moved aside by the client"
expect_contains "removed the link CLAUDE.md -> AGENTS.md, made again" "$ERR"
rm -rf "$G"/CLAUDE.md* "$G/AGENTS.md"

check "sandbox.writable: a directory the broker cannot search is refused (what it holds could not be kept read-only); once searchable, its agent settings stay read-only"
mkdir -p "$G/out/.claude"
echo '{}' >"$G/out/.claude/settings.json"
chown -R "$ND_USER:" "$G/out"
chmod 700 "$G/out"
cp "$SYSCONF" "$T/sysconf.saved"
sed -i 's/^workspace = rw$/workspace = ro/' "$SYSCONF" # under rw all of it is writable, no bind needed
printf '[sandbox]\nwritable = out\n' >>"$SYSCONF"
expect_exit 125 wrap 'echo x >out/.claude/settings.json; exit 42'
expect_lines 1 "$ERR"
expect_contains "cannot look into \"$G/out\" (Permission denied) to keep its .git read-only" "$ERR"
chmod 711 "$G/out"
expect_exit 73 wrap 'echo y >out/made && { echo x >out/.claude/settings.json && exit 42 || exit 73; }'
expect_equal '{}' "$(cat "$G/out/.claude/settings.json")" "agent settings inside a writable directory"
expect_equal y "$(cat "$G/out/made")" "what the run wrote in the writable directory"
cp "$T/sysconf.saved" "$SYSCONF"
rm -rf "$G/out"

check "a directory the run leaves in the stage that the broker cannot empty: the next run gets a new stage"
expect_exit 0 wrap 'mkdir -p .git/kept/inner && touch .git/kept/inner/x && chmod 700 .git/kept/inner'
abandoned=("$stage_root"/*.abandoned-*)
[[ -e ${abandoned[0]} ]] || fail "the stage the broker could not empty was not set aside"
expect_exit 0 wrap 'echo four >>f && git commit -qam four && [ ! -e .git/kept ]'
expect_equal "four" "$(as_caller git log -1 --format=%s)" "the commit through the new stage"

check "a run ended by its deadline (its container may outlive it) sets the stage aside: the next run gets a new one"
before=$(find "$stage_root" -maxdepth 1 -name '*.abandoned-*' | wc -l)
printf '[sandbox]\ntimeout = 2s\n' >"$U/.config/sandshim/config"
expect_exit 124 wrap 'sleep 30'
rm "$U/.config/sandshim/config"
expect_equal $((before + 1)) "$(find "$stage_root" -maxdepth 1 -name '*.abandoned-*' | wc -l)" "stages set aside"
expect_exit 0 wrap 'echo deadline >>f && git commit -qam after-deadline'
expect_equal after-deadline "$(as_caller git log -1 --format=%s)" "the commit through the new stage"
expect_equal "$before" "$(find "$stage_root" -maxdepth 1 -name '*.abandoned-*' | wc -l)" \
    "stages set aside after the next run (it removed the one it could empty, the caller's 0700 leftover stays)"

check ".git linked to the gate's directory from the start: no stage, so the run's workspace is read-only, said in one line"
mv "$G/.git" "$G/.git.real"
ln -s /.sandshim "$G/.git"
chown -h "$ND_USER:" "$G/.git"
expect_exit 42 wrap 'echo RAN; echo x >ro-run.txt; exit 42'
expect_file_is "$OUT" "RAN"
expect_contains "sandbox.workspace = rw: .git cannot be staged for this run" "$ERR"
expect_contains "the workspace is read-only in this run" "$ERR"
[[ ! -e $G/ro-run.txt ]] || fail "a run without a stage wrote the workspace"
rm "$G/.git" && mv "$G/.git.real" "$G/.git"

# The swapper, as the caller: at each "go", renames DIR/NAME away and puts a link to TARGET there.
swap_on_request() { # DIR NAME TARGET
    (cd "$1" && exec "${nd_command[@]}" /bin/sh -c 'while read -r _ <'"$T/fifos/go"'; do
        mv '"$2"' '"$2"'.real && ln -s '"$3"' '"$2"'; echo done >'"$T/fifos/done"'; done') &
    SWAPPER=$!
    BG_PIDS+=("$SWAPPER")
}
# CMD... with the swap made in the engine's window (its outcome in RC, OUT and ERR), then no swapper.
run_swapped() {
    touch "$T/swap-now"
    run_recorded "$@"
    rm "$T/swap-now"
    kill "$SWAPPER" 2>/dev/null
    wait "$SWAPPER" 2>/dev/null || true # killed: its status is not the check
}
restore_swapped() { # DIR NAME
    if [[ -L $1/$2 ]]; then rm "$1/$2" && mv "$1/$2.real" "$1/$2"; fi
}

check ".git swapped for a link to the gate's directory after the broker's check: the stage never stands in for the gate"
# .git's directories are bound from the host through the link: /.sandshim/hooks is no host path.
swap_on_request "$G" .git /.sandshim
run_swapped wrap 'echo RAN; exit 42'
restore_swapped "$G" .git
expect_equal 125 "$RC" "exit code with .git swapped for a link to /.sandshim"
expect_not_contains "RAN" "$OUT"
expect_contains "bind source path does not exist: $G/.git/" "$ERR"

check ".git swapped for a link to a locked repository after the broker's check: refused by the gate, nothing shown"
mkdir -p "$LOCKED/inside/objects" "$LOCKED/inside/refs" "$LOCKED/inside/logs" "$LOCKED/inside/hooks" \
    "$LOCKED/inside/branches" "$LOCKED/inside/info"
echo "the locked object" >"$LOCKED/inside/objects/secret-object"
swap_on_request "$G" .git "$LOCKED/inside"
run_swapped wrap 'cat .git/objects/secret-object .git/secret 2>/dev/null; exit 42'
restore_swapped "$G" .git
expect_equal 125 "$RC" "exit code with .git swapped for a link to a locked repository"
expect_not_contains "the locked object" "$OUT"
expect_not_contains "the secret" "$OUT"
expect_contains "what the engine mounted at '/.sandshim/git/" "$ERR"
expect_contains "' is not what the workspace held there when the broker checked it" "$ERR"
as_caller git fsck --no-dangling || fail "git fsck after the refused runs"

check "a .git of files only swapped for a link to the gate's directory: the broker's copies cover the gate, nothing runs"
F=$U/flat
mkdir -p "$F/.git"
printf 'ref: refs/heads/main\n' >"$F/.git/HEAD"
chown -R "$ND_USER:" "$F"
chmod 755 "$F"
swap_on_request "$F" .git /.sandshim
run_swapped as_nd "$F" "$T/bin/sandshim" -c 'echo RAN; exit 42'
expect_equal 127 "$RC" "exit code with the stage over the gate's directory (the engine found no gate)"
expect_not_contains "RAN" "$OUT"
expect_contains "exec /.sandshim/gate failed: No such file or directory" "$ERR"

check "through a broker wrap mode's shell writes the workspace by default (no workspace line); the row names what changed; sh by name stays read-only"
sed -i '/^workspace = /d' "$SYSCONF"
expect_exit 0 wrap 'echo yes > wrapped.txt'
expect_equal "$ND_USER yes" "$(stat -c %U "$G/wrapped.txt") $(cat "$G/wrapped.txt")" "the file the shell wrote, on the host"
expect_contains '"wrapped.txt"' <(broker_row "$(last_broker_run)" changed_paths)
run_recorded as_nd "$G" "$T/bin/sandshim" run -- sh -c 'echo no > by-name.txt'
[[ $RC != 0 && ! -e $G/by-name.txt ]] || fail "sh by name wrote the workspace under wrap (exit $RC)"

check "what stays read-only is the broker's: copies of the agent's settings and hooks (nothing in them runs, no link), git's directories bound at a fixed place"
mkdir -p "$G/.claude" "$G/.husky"
echo '{"a": 1}' >"$G/.claude/settings.json"
printf '#!/bin/sh\necho HOOK-RAN\n' >"$G/.husky/pre-commit"
chmod 755 "$G/.husky/pre-commit"
ln -s /etc/hostname "$G/.claude/linked"
chown -R "$ND_USER:" "$G/.claude" "$G/.husky"
chown -h "$ND_USER:" "$G/.claude/linked"
run_recorded wrap 'cat .claude/settings.json; ls -A .claude; readlink .git/objects; .husky/pre-commit; echo hook=$?; echo x >.claude/settings.json; echo write=$?; git log -1 --format=%s'
expect_equal 0 "$RC" "exit code of the look around"
expect_equal '{"a": 1}
settings.json
/.sandshim/git/objects
hook=126
write=1' "$(head -5 "$OUT")" "the copies, the link to git's objects, the hook that does not run, the refused write"
expect_contains "Read-only file system" "$ERR"
expect_equal '{"a": 1}' "$(cat "$G/.claude/settings.json")" "the caller's settings after the run"
expect_exit 0 wrap 'echo seven >>f && git commit -qam seven'
expect_equal "seven" "$(as_caller git log -1 --format=%s)" "a commit through the linked directories, on the host"
as_caller git fsck --no-dangling || fail "git fsck after the commit through the fixed place"
rm -rf "$G/.claude" "$G/.husky"

check "a workspace's .claude swapped for a link to the gate's directory while the run starts: the broker's copy covers the gate, nothing of the caller's runs"
W=$U/claudeswap
mkdir -p "$W/.claude"
printf '#!/bin/sh\necho PWNED\n' >"$W/.claude/gate"
chmod 755 "$W/.claude/gate"
chown -R "$ND_USER:" "$W"
chmod 755 "$W"
swap_on_request "$W" .claude /.sandshim
run_swapped as_nd "$W" "$T/bin/sandshim" -c 'echo RAN; exit 42'
expect_not_contains "PWNED" "$OUT"
expect_not_contains "RAN" "$OUT"
[[ $RC == 126 || $RC == 127 ]] || fail "exit code with the copy over the gate's directory: $RC (expected 126 or 127: the gate is the copy's file, which does not run)"

check "a workspace one level below /, its .claude swapped for a link to the gate's directory: the read-only copy there takes no mount point, nothing runs; the next run has the current copies"
# There the copy's bind comes before git's directories (the engine orders binds by depth; the
# gate's has the same depth), lands at /.sandshim, and the engine cannot make a mount point in it.
S=$(mktemp -d /sandshim-test-swap.XXXXXX)
REMOVE_AT_EXIT+=("$S")
chmod 755 "$S"
mkdir -p "$S/.claude"
echo '{"s": 1}' >"$S/.claude/settings.json"
chown -R "$ND_USER:" "$S"
(cd "$S" && exec "${nd_command[@]}" /bin/sh -c 'PATH=/usr/bin:/bin; git init -q && echo one >f && git add f && git -c user.name=c -c user.email=c@c commit -qm one')
swap_on_request "$S" .claude /.sandshim
run_swapped as_nd "$S" "$T/bin/sandshim" -c 'echo RAN; exit 42'
restore_swapped "$S" .claude
expect_not_contains "RAN" "$OUT"
expect_equal 125 "$RC" "exit code with the copy at the gate's directory"
expect_contains 'error mounting' "$ERR" # the gate's or git's: the engine orders binds of one depth as it likes
expect_contains 'read-only file system' "$ERR"
echo '{"s": 2}' >"$S/.claude/settings.json"
expect_exit 42 as_nd "$S" "$T/bin/sandshim" -c 'cat .claude/settings.json; echo x >>f; exit 42'
expect_file_is "$OUT" '{"s": 2}'
expect_equal "one
x" "$(cat "$S/f")" "the workspace after the next run"
rm -rf "$S"

check "the system file's sandbox.workspace = ro closes the workspace to wrap mode's shell too"
sed -i 's/^\[sandbox\]$/[sandbox]\nworkspace = ro/' "$SYSCONF"
run_recorded wrap 'echo no > ro.txt'
expect_equal 1 "$RC" "exit code of a write under ro"
expect_contains "Read-only file system" "$ERR"
[[ ! -e $G/ro.txt ]] || fail "wrap mode's shell wrote the workspace under ro"
expect_equal null "$(broker_row "$(last_broker_run)" changed_count)" "changed_count of a read-only run"
sed -i 's/^workspace = ro$/workspace = rw/' "$SYSCONF"

check "warm through the broker's launcher: git's writes reach the host from a warm container too, whose copies of the agent's settings are the current ones"
broker_stop_if_started
mkdir -p "$G/.claude"
echo '{"v": 1}' >"$G/.claude/settings.json"
chown -R "$ND_USER:" "$G/.claude"
printf '[pool]\nsize = 1\nmax = 1\nidle_ttl = 2m\nstart = launcher\n' >>"$SYSCONF"
POOL_WORKSPACE=$G
start_warm_broker brokergit
expect_exit 0 wrap 'echo five >>f && git commit -qam five'
for ((i = 0; i < 100; i++)); do
    [[ -z $(broker_pool_containers) ]] || break
    sleep 0.2
done
expect_cannot_plant "$(container_pid_of "$G")"
echo '{"v": 2}' >"$G/.claude/settings.json"
expect_exit 0 wrap 'echo six >>f && git commit -qam six && cat .claude/settings.json'
expect_file_is "$OUT" '{"v": 2}'
id=$(last_broker_run)
expect_equal true "$(broker_row "$id" warm)" "the second run was warm"
expect_equal "six five" "$(as_caller git log -2 --format=%s | tr '\n' ' ' | sed 's/ $//')" "the commits on the host"
as_caller git fsck --no-dangling || fail "git fsck after the warm run"

assert_no_sandshim_containers
suite_done
