#!/usr/bin/env bash
# Every shell script of the repository parses (bash -n) and has no error-level shellcheck finding:
# a script that does not parse fails CI in its first second, before any test can say why.
# Usage: tests/lint/scripts.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: scripts.sh SOURCE_DIR}"
mapfile -t scripts < <(git ls-files -- '*.sh' .ci/run 2>/dev/null || find . -name '*.sh' -not -path './build*')
((${#scripts[@]} > 0)) || { echo "no shell scripts found under $PWD" >&2; exit 1; }
failed=0
for script in "${scripts[@]}"; do
    bash -n "$script" || { echo "does not parse: $script" >&2; failed=1; }
done
command -v shellcheck >/dev/null 2>&1 || { echo "shellcheck not installed (install/deps.sh installs it)" >&2; exit 1; }
shellcheck -S error -- "${scripts[@]}" || failed=1
# The scripts the README and docs tell a user to run by their path are executable in git (a clone
# keeps git's mode; `install/uninstall.sh` once was not, and said "Permission denied").
while read -r mode _ _ path; do
    [[ $mode == 100755 ]] || { echo "not executable in git (git update-index --chmod=+x): $path" >&2; failed=1; }
done < <(git ls-files -s -- 'install/*.sh' 'bench/*.sh' .ci/run 2>/dev/null | grep -v '/lib/')
((failed == 0)) && echo "${#scripts[@]} scripts parse and pass shellcheck -S error"
exit "$failed"
