#!/usr/bin/env bash
# Every C++ file of the repository is formatted as .clang-format says: CI checks what reviewers
# would otherwise ask for by hand. Fix with: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
# Usage: tests/lint/format.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: format.sh SOURCE_DIR}"
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not installed (install/deps.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' 2>/dev/null ||
    find . \( -name '*.cpp' -o -name '*.hpp' \) -not -path './build*')
((${#files[@]} > 0)) || { echo "no C++ files found under $PWD" >&2; exit 1; }
if ! clang-format --dry-run --Werror -- "${files[@]}"; then
    echo "some files are not clang-formatted; fix with: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i" >&2
    exit 1
fi
echo "${#files[@]} C++ files are clang-formatted"
