#!/usr/bin/env bash
# Wrap mode doing the work (issue 24, item 5): the everyday corpus's quick, executable commands
# (git, in-place edits, make, text tools) run in a small git project twice, each time in a fresh
# copy: natively, and as Claude Code runs every command once installed with `--mode wrap`
# (`sandshim -c COMMAND`, its CLAUDE_CODE_SHELL_PREFIX). Compares the exit status and the files
# afterwards (a digest of the work tree and of git's refs and index), prints each mismatch with
# the first line the sandboxed run printed, and the share that match (target: 99 %).
# Asserts nothing. Needs a container engine and sandshim's wrap image.
#
# WORKSPACE=default (the default) writes no sandbox.workspace line: the installed default, `wrap`
# (the shell's commands write the workspace; git's writes go through the stage; its config and
# hooks, agent settings and hook files stay read-only; through a broker, as its copies);
# WORKSPACE=rw, wrap or ro writes that line (the bench's user config; through a broker, its
# system file). As root the sandbox runs as nobody, who
# owns none of the project: AS_USER=NAME (a user who may reach the engine) runs the bench as
# that user, as an agent's user would. BROKER=1 (root, with AS_USER a user outside the docker
# group) runs it through a private broker as installed, whose system file sets the workspace
# (the user's config may only tighten it).
#
#   bench/wrap_corpus.sh [BUILD_DIR]                    (default: build)
#   AS_USER=dev WORKSPACE=ro bench/wrap_corpus.sh
#   AS_USER=nodocker BROKER=1 bench/wrap_corpus.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
as_user() { # ENV...: this script again as $AS_USER
  runuser -u "$AS_USER" -- env SANDSHIM_BIN="$bin" PATH="$PATH" "$@" \
    bash "$(realpath "${BASH_SOURCE[0]}")" "$build"
}
if [[ $EUID -eq 0 && -n ${AS_USER:-} && ${BROKER:-0} == 1 ]]; then
  # shellcheck source=lib/private_broker.sh
  . "$(dirname "${BASH_SOURCE[0]}")/lib/private_broker.sh"
  broker_dir=$(mktemp -d /tmp/sandshim-wrap-broker.XXXXXX)
  trap 'private_broker_remove "$broker_dir"' EXIT
  tail_text=$'[images]\nbash = sandshim/wrap:bookworm\n'
  [[ ${WORKSPACE:-default} == default ]] || tail_text+=$'[sandbox]\nworkspace = '"$WORKSPACE"$'\n'
  private_broker_start "$broker_dir" "$bin" "$tail_text"
  bin=$PRIVATE_BIN
  as_user WORKSPACE=broker-"${WORKSPACE:-default}" SANDSHIM_BROKER=required \
    SANDSHIM_BROKER_SOCKET="$PRIVATE_SOCKET"
  exit
fi
if [[ $EUID -eq 0 && -n ${AS_USER:-} ]]; then
  as_user WORKSPACE="${WORKSPACE:-default}"
  exit
fi
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus=$source_dir/tests/data/hooks/everyday_corpus.txt

# Corpus entries that run in a second on the project below and need no network or toolchain.
ids=(
  git-git-status git-git-status-short git-git-diff git-git-diff-stat git-git-diff-cached
  git-git-log-oneline-20 git-git-log-p-1 git-git-show-head-stat git-git-add-a
  git-git-commit-am-wip git-git-checkout-b-fix-parser git-git-stash-list git-git-branch-a
  git-git-grep-n-todo git-git-ls-files-wc-l git-git-rev-parse-show-toplevel git-git-tag-l
  git-git-config-user-name git-git-no-pager-diff git-git-pager-cat-git-log
  git-git-editor-true-git-rebase git-git-diff-tmp-change-diff git-git-stash git-git-commit-f-eof
  sh-sed-i-s-old-name sh-sed-i-bak-e-s sh-sed-n-10-40p-src sh-grep-rn-def-main-src
  sh-find-type-f-name-pyc sh-ls-la sh-cat-readme-md sh-head-50-src-app-py sh-wc-l-src-py
  sh-touch-src-init-py sh-mkdir-p-out-cp-r sh-mv-old-txt-new-txt sh-cat-notes-txt-eof
  sh-chmod-x-scripts-check-sh sh-printf-s-n-a-b sh-for-f-in-src-py sh-if-f-makefile-then-make
  sh-diff-u-a-txt-b sh-time-make-j2 sh-make-2-1-tee-tmp sh-cd-src-make-echo-ok c-make c-make-clean
  c-make-test c-make-j2 sh-bash-n-scripts-check-sh
)

work=$(mktemp -d /tmp/sandshim-wrap-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # the sandbox user must reach the project, as it reaches a home one
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/home/.local/share SANDSHIM_AUDIT_DB=$work/audit.db
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev
export GIT_COMMITTER_EMAIL=dev@example.com
unset SANDSHIM_LOG
mkdir -p "$HOME"
git config --global user.name dev
git config --global user.email dev@example.com
mkdir -p "$XDG_CONFIG_HOME/sandshim"
case ${WORKSPACE:-default} in # through a broker (broker-*) its system file says
  rw | wrap | ro) printf '[sandbox]\nworkspace = %s\n' "$WORKSPACE" > "$XDG_CONFIG_HOME/sandshim/config" ;;
esac

# The project: Python sources, a Makefile whose targets write, a few text files, two commits.
template=$work/template
mkdir -p "$template/src" "$template/tests" "$template/scripts"
(
  cd "$template"
  printf 'def main():\n    old_name = 1  # TODO: rename\n    return old_name\n' > src/app.py
  printf 'from src.app import main\n\ndef test_main():\n    assert main() == 1\n' > tests/test_app.py
  printf '# Project\nCopyright 2023\n' > README.md
  printf 'all: out/app.txt\nout/app.txt: src/app.py\n\tmkdir -p out && cp src/app.py $@\n' > Makefile
  printf 'test: all\n\tgrep -q main out/app.txt\nclean:\n\trm -rf out\n' >> Makefile
  printf '#!/bin/sh\necho checked\n' > scripts/check.sh
  printf 'a\nb\n' > a.txt
  printf 'a\nc\n' > b.txt
  echo old > old.txt
  git init -q -b main . && git add -A && git commit -qm "first"
  echo "    pass" >> src/app.py && git commit -qam "second"
  echo "# draft" >> src/app.py
)

# A digest of what a command may change: the work tree, git's index, HEAD and every ref's history
# by tree, subject and author (a new commit's id holds the second it was made, and the wrapped
# run comes after the native one).
digest() { # DIR
  (cd "$1" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum
    git -C "$1" symbolic-ref -q HEAD || echo detached
    git -C "$1" for-each-ref --format='%(refname)' | while read -r ref; do
      echo "$ref"; git -C "$1" log --format='%T %s %an <%ae>' "$ref"
    done
    git -C "$1" ls-files -s) |
    sha256sum | cut -c1-16
}

command_of() { # ID
  awk -v id="$1" '
    /^=== / { if (found) exit; found = (substr($0, 5, length(id) + 1) == id " ") ; next }
    found && /^>>> / { exit }
    found { print }' "$corpus"
}

matched=0 total=0
printf '== %d commands, natively and through `sandshim -c` (Claude Code in wrap mode), as %s, workspace %s\n' \
  "${#ids[@]}" "$(id -un)" "${WORKSPACE:-default}"
for id in "${ids[@]}"; do
  command=$(command_of "$id")
  if [[ -z $command ]]; then
    echo "  $id: not in the corpus" >&2
    continue
  fi
  rm -rf "$work/native" "$work/wrapped"
  cp -a "$template" "$work/native"
  cp -a "$template" "$work/wrapped"
  native=$(cd "$work/native" && bash -c "$command" > "$work/native.out" 2>&1; echo $?)
  # Two commands write these in the host's /tmp: left there, they would be another user's next
  # time (the sandbox's /tmp is its own).
  rm -f /tmp/change.diff /tmp/build.log 2>/dev/null || true
  wrapped=$(cd "$work/wrapped" && timeout 120 "$bin" -c "$command" > "$work/wrapped.out" 2>&1
    echo $?)
  total=$((total + 1))
  same_files=$([[ $(digest "$work/native") == $(digest "$work/wrapped") ]] && echo y || echo n)
  if [[ $native == "$wrapped" && $same_files == y ]]; then
    matched=$((matched + 1))
  else
    printf '  differs: %-36s exit %s vs %s, files %s: %s\n' "$id" "$native" "$wrapped" \
      "$([[ $same_files == y ]] && echo same || echo differ)" \
      "$(grep -v '^$' "$work/wrapped.out" | head -1 | cut -c1-90)"
  fi
done
awk -v m="$matched" -v t="$total" 'BEGIN {
  printf "== same exit status and files: %d of %d (%.1f %%; target 99 %%)\n", m, t, 100 * m / t }'
