#!/usr/bin/env bash
# sandshim-test-engines: docker podman
# sandshim-test-labels: cache
# Writes that outlive a run, only where the user's own config allows them: sandbox.cache = on
# gives the interpreters a cache directory that survives (outside the workspace, per workspace
# and user, emptied past its size, never executable under podman, removed by `sandshim gc` once
# its workspace is gone); sandbox.writable makes a sub-path writable while .git and agent
# settings inside it stay read-only; a workspace file may set neither; a refused write is
# followed by one line naming the keys; sandbox.workspace = rw keeps git's config and hooks and
# agent settings read-only, carries git's own writes back to the host's .git and leaves what
# steers git in the sandbox, and moves aside such a name a run creates. Each in both directions.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$WS/out/.claude" "$WS/out/.git"
chmod -R 777 "$WS/out" # writable by the sandbox user: only the mounts may stop a write

check "cache off (default): the interpreters have no cache and nothing survives"
expect_exit 42 sandshim run -- sh -c '[ -z "$PIP_CACHE_DIR" ] && [ ! -e /sandshim-cache ] && exit 42 || exit 73'

check "cache on: a file written in the cache is there in the next run"
write_user_config <<'CONF'
[sandbox]
cache = on
CONF
expect_exit 42 sandshim run -- sh -c 'mkdir -p "$PIP_CACHE_DIR" && echo kept >"$PIP_CACHE_DIR/marker" && exit 42'
expect_exit 42 sandshim run -- sh -c '[ "$(cat "$PIP_CACHE_DIR/marker")" = kept ] && exit 42 || exit 73'
cache_dirs=("$XDG_STATE_HOME"/sandshim/cache/*-*[0-9])
[[ -f ${cache_dirs[0]}/pip/marker ]] || fail "no cache directory under sandshim's state: ${cache_dirs[*]}"
case $WS/ in "${cache_dirs[0]}"/*) fail "the cache is inside the workspace" ;; esac

check "cache on: python sees the cache locations (its image writes no bytecode: PYTHONDONTWRITEBYTECODE)"
expect_exit 42 sandshim run -- python3 -c 'import os, sys; sys.exit(42 if os.environ["PYTHONPYCACHEPREFIX"] == "/sandshim-cache/pycache" else 73)'

check "cache: a program copied into the cache cannot be executed (podman: noexec)"
if skip_check_on docker "docker's CLI cannot mount a host directory noexec (documented gap)"; then :; else
    write_user_config <<<$'[sandbox]\ncache = on'
    expect_exit 42 sandshim run -- sh -c 'mkdir -p "$XDG_CACHE_HOME" && cp /bin/true "$XDG_CACHE_HOME/t" || exit 73; "$XDG_CACHE_HOME/t" && exit 73 || exit 42'
fi

check "cache: a workspace file may turn it off, not on"
printf '[sandbox]\ncache = off\n' >"$WS/.sandshim.conf"
expect_exit 42 sandshim run -- sh -c '[ -z "$PIP_CACHE_DIR" ] && exit 42 || exit 73'
reset_user_config
printf '[sandbox]\ncache = on\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- sh -c 'exit 73'
expect_contains "would loosen the policy" "$ERR"
rm "$WS/.sandshim.conf"

check "cache: sandshim gc removes the caches of workspaces that are gone, keeps the rest"
other=$(new_workspace)
(cd "$other" && write_user_config <<<$'[sandbox]\ncache = on' && expect_exit 0 sandshim run -- sh -c 'true')
rm -rf "$other"
expect_exit 0 sandshim gc
expect_contains "removed 1 cache(s) of removed workspaces" "$OUT"
[[ -f ${cache_dirs[0]}/pip/marker ]] || fail "gc removed the cache of a live workspace"
reset_user_config

check "writable: the workspace is read-only, and the refusal names the keys that allow writes"
expect_exit 73 sandshim run -- sh -c 'echo x >out/file && exit 42 || exit 73'
expect_contains "Read-only file system" "$ERR"
expect_contains "sandbox.writable = PATH" "$ERR"

check "writable: the user's sandbox.writable = out allows writes there, never in its .git or .claude"
write_user_config <<'CONF'
[sandbox]
writable = out
CONF
expect_exit 42 sandshim run -- sh -c 'echo x >out/file && exit 42 || exit 73'
expect_equal x "$(cat "$WS/out/file")" "file written through sandbox.writable"
expect_exit 73 sandshim run -- sh -c 'echo x >out/.claude/settings.json && exit 42 || exit 73'
expect_exit 73 sandshim run -- sh -c 'echo x >out/.git/config && exit 42 || exit 73'
expect_exit 73 sandshim run -- sh -c 'echo x >elsewhere && exit 42 || exit 73'

check "writable: a workspace file may not set it, and .git may never be writable"
reset_user_config
printf '[sandbox]\nwritable = out\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- sh -c 'exit 73'
expect_contains "sandbox.writable = \"out\": may not be set in a workspace file" "$ERR"
rm "$WS/.sandshim.conf"
write_user_config <<'CONF'
[sandbox]
writable = .git
CONF
expect_exit 125 sandshim run -- sh -c 'exit 73'
expect_contains '".git" always stays read-only' "$ERR"
reset_user_config

check "workspace = rw: the workspace is writable, its .git and agent settings stay read-only"
mkdir -p "$WS/.git/hooks" "$WS/.claude"
echo '{}' >"$WS/.claude/settings.json"
chmod -R 777 "$WS/.git" "$WS/.claude"
chmod 777 "$WS"
write_user_config <<<$'[sandbox]\nworkspace = rw'
expect_exit 42 sandshim run -- sh -c 'echo x >notes.txt && exit 42 || exit 73'
expect_equal x "$(cat "$WS/notes.txt")" "file written at the workspace root under workspace = rw"
expect_exit 73 sandshim run -- sh -c 'echo x >.git/hooks/pre-commit && exit 42 || exit 73'
[[ ! -e $WS/.git/hooks/pre-commit ]] || fail "a run wrote a git hook under workspace = rw"
expect_exit 73 sandshim run -- sh -c 'echo x >.claude/settings.json && exit 42 || exit 73'
expect_equal '{}' "$(cat "$WS/.claude/settings.json")" "agent settings unchanged under workspace = rw"
mkdir -p "$T/elsewhere" && echo "not the workspace's" >"$T/elsewhere/file"
ln -s "$T/elsewhere" "$WS/.vscode"
expect_exit 125 sandshim run -- sh -c "cat '$T/elsewhere/file'; exit 42"
expect_not_contains "not the workspace's" "$OUT"
expect_contains "the workspace's .vscode leads out of the workspace (a symbolic link)" "$ERR"
rm "$WS/.vscode"

check "workspace = rw: git's own writes reach the host's .git (a commit, a branch, a stash)"
repo=$(new_workspace)
cd "$repo"
git config --global user.name dev && git config --global user.email dev@example.com
echo one >f && git add f && git commit -qm one
base=$(git symbolic-ref --short HEAD)
chmod -R a+rwX "$repo" # the sandbox user (nobody, under root) writes git's objects and refs
expect_exit 0 sandshim -c 'echo two >>f && git commit -qam two && git checkout -qb topic && echo three >>f && git stash -q'
expect_equal "two dev" "$(git log -1 --format='%s %an' "$base")" "the run's commit on the host"
expect_equal refs/heads/topic "$(git symbolic-ref HEAD)" "the host's branch after the run's checkout -b"
expect_equal "" "$(git status --porcelain)" "the stash left index and work tree clean"
git stash list | grep -q "WIP on topic" || fail "no stash on the host after the run's git stash"
git fsck --no-dangling || fail "git fsck after the run's writes"
sandshim audit list --limit 1 --json >"$T/row"
expect_contains "carried to the host's .git: " "$T/row"

check "workspace = rw: what steers git on the host (config, commondir, a bent HEAD, a reflog link, hooks) stays in the sandbox"
expect_exit 0 sandshim -c 'git config core.fsmonitor "touch pwned"; printf "%s\n" "$PWD/evil" >.git/commondir; echo "ref: refs/heads/../../x" >.git/HEAD; ln -sf /etc/passwd .git/ORIG_HEAD; ln -sf "$PWD/f" .git/logs/HEAD; true'
expect_contains "left in the sandbox (such files steer git on the host): .git/HEAD (not in git's shape), .git/ORIG_HEAD (not in git's shape), .git/commondir, .git/config" "$ERR"
expect_contains "removed from the host's .git (a link or fifo git would write through): logs/HEAD" "$ERR"
[[ ! -e .git/commondir ]] || fail "the run's .git/commondir reached the host"
[[ ! -L .git/logs/HEAD ]] || fail "the run's link at .git/logs/HEAD stayed for git on the host to append through"
if git config core.fsmonitor; then fail "the run's core.fsmonitor reached the host's .git/config"; fi
expect_equal refs/heads/topic "$(git symbolic-ref HEAD)" "the host's HEAD after a bent one"
git status >/dev/null && [[ ! -e pwned ]] || fail "git on the host ran what the sandbox configured"
sandshim audit list --limit 1 --json >"$T/row"
expect_contains "left in the sandbox" "$T/row"
expect_exit 73 sandshim -c 'echo x >.git/hooks/pre-commit && exit 42 || exit 73'
[[ ! -e .git/hooks/pre-commit ]] || fail "a run wrote a git hook through the stage"

check "workspace = rw: a HEAD the host changed during the run is the host's, and named"
rm -f go
sandshim -c "git checkout -q $base"' && until [ -e go ]; do sleep 0.1; done' 2>"$T/race.err" &
racer=$!
wait_until 30 "the run's checkout" sh -c 'grep -q "to $1\$" .git/logs/HEAD' _ "$base"
git symbolic-ref HEAD refs/heads/elsewhere && touch go
wait "$racer" || fail "the racing run failed"
expect_contains "not carried, the host's kept: HEAD (changed on the host meanwhile)" "$T/race.err"
expect_equal refs/heads/elsewhere "$(git symbolic-ref HEAD)" "the host's own HEAD change"
rm -f go
cd "$WS"

check "workspace = rw: sandshim gc removes the git stage of a workspace that is gone, keeps the rest"
stages=("$XDG_STATE_HOME"/sandshim/git-stage/*.workspace)
expect_equal 2 "${#stages[@]}" "git stages (this suite's workspace and the repository above)"
rm -rf "$repo"
expect_exit 0 sandshim gc
expect_contains "removed 1 git stage(s) of removed workspaces" "$OUT"
stages=("$XDG_STATE_HOME"/sandshim/git-stage/*.workspace)
expect_equal "$WS" "$(cat "${stages[@]}")" "the git stage kept"

check "workspace = rw: a protected name the run creates, or writes in place of a link, is moved aside and named, and a link it removed or replaced is made again"
expect_exit 0 sandshim run -- sh -c 'echo x >.envrc && mkdir .vscode'
[[ ! -e $WS/.envrc && ! -e $WS/.vscode ]] || fail ".envrc or .vscode made by a run stayed in place"
aside=("$WS"/.envrc.sandshim-*)
[[ -f ${aside[0]} ]] || fail ".envrc was not moved aside: ${aside[*]}"
expect_contains "the run created .vscode, moved to .vscode.sandshim-" "$ERR"
sandshim audit list --limit 1 --json >"$T/row"
expect_contains "created .envrc, moved to .envrc.sandshim-" "$T/row"
echo rules >"$WS/AGENTS.md"
ln -s AGENTS.md "$WS/CLAUDE.md"
expect_exit 0 sandshim run -- sh -c 'rm CLAUDE.md && echo injected >CLAUDE.md'
[[ -L $WS/CLAUDE.md && $(readlink "$WS/CLAUDE.md") == AGENTS.md ]] || fail "CLAUDE.md is not the link it was after a run replaced it: $(ls -l "$WS/CLAUDE.md" 2>&1)"
expect_equal injected "$(cat "$WS"/CLAUDE.md.sandshim-*)" "the run's CLAUDE.md, moved aside"
expect_contains "the run created CLAUDE.md, moved to CLAUDE.md.sandshim-" "$ERR"
expect_contains "removed the link CLAUDE.md -> AGENTS.md, made again" "$ERR"
expect_equal rules "$(cat "$WS/AGENTS.md")" "what the link led to (kept read-only)"
# Removed and nothing in its place: the link is made again all the same.
expect_exit 0 sandshim run -- sh -c 'rm CLAUDE.md'
[[ -L $WS/CLAUDE.md && $(readlink "$WS/CLAUDE.md") == AGENTS.md ]] || fail "CLAUDE.md, removed by a run, is not made again"
expect_contains "removed the link CLAUDE.md -> AGENTS.md, made again" "$ERR"
expect_not_contains "such files steer git" "$ERR"
rm -rf "$WS"/.envrc.sandshim-* "$WS"/.vscode.sandshim-* "$WS"/CLAUDE.md* "$WS/AGENTS.md" "$WS/notes.txt" "$WS/.git" "$WS/.claude"
reset_user_config

assert_no_sandshim_containers
suite_done
