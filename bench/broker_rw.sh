#!/usr/bin/env bash
# What a writable workspace costs wrap mode's shell through a broker (its default since the broker
# binds nothing of the caller's inside the workspace): `sandshim -c 'echo x >>out'` in a git
# repository with agent settings (.claude, CLAUDE.md), as a user outside the docker group, through
# a private broker with a warm pool, under the default (`wrap`: the broker's copies refreshed, its
# git stage filled and emptied, the changed files counted after the run) against the same with the
# user's config at `sandbox.workspace = ro` (nothing of that; the write fails, as it would), side
# by side in alternating order (farm-bench). Prints farm-bench's report: the ratio A/B of the
# medians is the cost. Asserts nothing. Root only; AS_USER (default wrapbench-nd, made if absent)
# is the caller.
#
#   bench/broker_rw.sh [BUILD_DIR]          N=20 FILES=1000 bench/broker_rw.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
user=${AS_USER:-wrapbench-nd}
files=${FILES:-1000}
[[ $EUID -eq 0 ]] || {
  echo "broker_rw.sh: run as root (it starts a private broker and runs as $user)" >&2
  exit 2
}
command -v farm-bench >/dev/null || {
  echo "broker_rw.sh: farm-bench is not on PATH" >&2
  exit 2
}
id "$user" >/dev/null 2>&1 || useradd -m "$user"
# shellcheck source=lib/private_broker.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/private_broker.sh"
work=$(mktemp -d /tmp/sandshim-broker-rw.XXXXXX)
trap 'private_broker_remove "$work/broker"; rm -rf "$work"' EXIT
chmod 755 "$work"
private_broker_start "$work/broker" "$bin" \
  $'[images]\nbash = sandshim/wrap:bookworm\n[pool]\nsize = 1\nmax = 2\nstart = launcher\n'

repo=$work/repo
home=$work/home
mkdir -p "$repo/.claude" "$home/wrap/sandshim" "$home/ro/sandshim"
printf '[sandbox]\nworkspace = ro\n' >"$home/ro/sandshim/config"
for ((i = 0; i < files; i++)); do echo "$i" >"$repo/f$i.txt"; done
echo '{}' >"$repo/.claude/settings.json"
echo 'rules' >"$repo/CLAUDE.md"
chown -R "$user:" "$repo" "$home"
runuser -u "$user" -- sh -c "cd '$repo' && git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm files"

# One script per variant (the same command line but the caller's config directory).
for variant in wrap ro; do
  cat >"$work/run-$variant.sh" <<SCRIPT
cd '$repo' && exec runuser -u '$user' -- env HOME='$home' XDG_CONFIG_HOME='$home/$variant' \\
  SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET='$PRIVATE_SOCKET' '$PRIVATE_BIN' -c 'echo x >>out'
SCRIPT
done
echo "== wrap mode's shell through a broker, $files tracked files: A the default (wrap: writes), B sandbox.workspace = ro (the write fails)"
farm-bench -n "${N:-20}" --warmup 2 --timeout 600 --vs "sh $work/run-ro.sh" -- sh "$work/run-wrap.sh"
