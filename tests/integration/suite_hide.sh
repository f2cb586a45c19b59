#!/usr/bin/env bash
# sandshim-test-engines: docker podman
# sandshim-test-labels: hide
# Secrets in the workspace stay out of sight: sandbox.hide masks what its globs match with an
# empty read-only file or directory, a workspace file may add globs but never take one back,
# past sandbox.hide_limit the run is refused rather than run unmasked, and secrets in the
# environment (any case, URL credentials in a value) never enter. Each property in both
# directions: hidden under the policy, visible when the user's own config allows it.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$WS/.ssh" "$WS/app" "$WS/src"
echo "API_KEY=sentinel-env" >"$WS/.env"
echo "sentinel-local" >"$WS/app/.env.local"
echo "sentinel-ssh" >"$WS/.ssh/config"
echo "sentinel-notes" >"$WS/src/notes.txt"
echo "print('code')" >"$WS/src/main.py"
git -C "$WS" config remote.origin.url https://example.invalid/r.git
chmod -R a+rX "$WS"

# 42: the file reads empty (masked); 73: it has content.
empty_or_not='[ -z "$(cat "$1")" ] && exit 42 || { cat "$1"; exit 73; }'

check "hide: .env and .env.* read empty inside, the code beside them does not"
expect_exit 42 sandshim run -- sh -c "$empty_or_not" - .env
expect_exit 42 sandshim run -- sh -c "$empty_or_not" - app/.env.local
expect_exit 73 sandshim run -- sh -c "$empty_or_not" - src/main.py

check "hide: the audit row counts the masked paths and names the globs that matched"
expect_equal 3 "$(audit_field last hidden_count)" "hidden_count"
expect_equal '[".env", ".env.*", ".ssh/"]' "$(audit_field last hidden_globs)" "hidden_globs"

check "hide: a masked directory is empty and a masked file cannot be written, even in an rw workspace"
write_user_config <<'CONF'
[sandbox]
workspace = rw
CONF
expect_exit 42 sandshim run -- sh -c 'ls -A .ssh | grep -q . && exit 73; echo x >>.env && exit 73; exit 42'
grep -qE 'cannot create .env: (Read-only file system|Permission denied)' "$ERR" || fail "the write to .env was not refused: $(cat "$ERR")"

check "hide control: the user's own sandbox.unhide shows them again"
write_user_config <<'CONF'
[sandbox]
unhide = .env .ssh/
CONF
expect_exit 73 sandshim run -- sh -c "$empty_or_not" - .env
expect_contains sentinel-env "$OUT"
expect_exit 73 sandshim run -- sh -c "$empty_or_not" - .ssh/config
expect_exit 42 sandshim run -- sh -c "$empty_or_not" - app/.env.local
reset_user_config

check "hide: a workspace .sandshim.conf may add a glob, and may not take one back"
printf '[sandbox]\nhide = notes.txt\n' >"$WS/.sandshim.conf"
expect_exit 42 sandshim run -- sh -c "$empty_or_not" - src/notes.txt
printf '[sandbox]\nunhide = .env\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- sh -c 'exit 73'
expect_contains "sandbox.unhide" "$ERR"
expect_contains "sandbox.unhide = \".env\": may not be set in a workspace file" "$ERR"
rm "$WS/.sandshim.conf"
expect_exit 73 sandshim run -- sh -c "$empty_or_not" - src/notes.txt

check "hide: git's config is readable without credentials, masked with them"
expect_exit 73 sandshim run -- sh -c "$empty_or_not" - .git/config
git -C "$WS" config remote.origin.url https://me:sentinel-pw@example.invalid/r.git
expect_exit 42 sandshim run -- sh -c "$empty_or_not" - .git/config
expect_contains '.git/config (credentials)' <(audit_field last hidden_globs)
git -C "$WS" config remote.origin.url https://example.invalid/r.git

check "hide: past sandbox.hide_limit the run is refused with one line naming it, nothing runs"
write_user_config <<'CONF'
[sandbox]
hide_limit = 5
CONF
before=$(run_count)
expect_exit 125 sandshim run -- sh -c 'exit 73'
expect_contains "(sandbox.hide_limit = 5); raise sandbox.hide_limit" "$ERR"
expect_lines 1 "$ERR"
expect_run last refused 125
expect_equal $((before + 1)) "$(run_count)" "runs recorded"
reset_user_config
expect_exit 73 sandshim run -- sh -c 'exit 73'

check "env: deny patterns ignore case and win over LC_*; URL credentials are refused by name"
expect_exit 42 env LC_GITHUB_PAT=sentinel-pat LC_AccessToken=sentinel-tok \
    LC_DATABASE_URL=postgres://u:sentinel-pw@db/x LC_PLAIN=kept \
    "$SANDSHIM_BIN" run -- sh -c 'env | grep -q sentinel && exit 73; [ "$LC_PLAIN" = kept ] && exit 42'
expect_contains "not passed into the sandbox, their values hold URL credentials: LC_DATABASE_URL" "$ERR"
expect_not_contains sentinel "$ERR"

check "env control: a value without a password passes"
expect_exit 42 env LC_DATABASE_URL=postgres://db/x \
    "$SANDSHIM_BIN" run -- sh -c '[ "$LC_DATABASE_URL" = postgres://db/x ] && exit 42 || exit 73'

assert_no_sandshim_containers
suite_done
