#!/usr/bin/env bash
# The README stays a guide a newcomer reads top to bottom (at most 250 lines; the reference lives in
# docs/), and every relative link in README.md and docs/*.md names a file that exists, so moving a
# section cannot leave a dead link behind.
# Usage: tests/lint/docs.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: docs.sh SOURCE_DIR}"

readonly k_max_readme_lines=250
failed=0

lines=$(wc -l <README.md)
if ((lines > k_max_readme_lines)); then
    echo "README.md has $lines lines, over $k_max_readme_lines: move reference material into docs/" >&2
    failed=1
fi

# The targets of [text](target) outside fenced code blocks, one a line, without a #fragment.
link_targets() {
    awk '/^```/ { fenced = !fenced; next } !fenced' "$1" |
        grep -oE '\]\([^) ]+\)' | sed -E 's/^\]\(//; s/\)$//; s/#.*$//' || true
}

checked=0
for doc in README.md docs/*.md; do
    while IFS= read -r target; do
        [[ -z $target || $target =~ ^[a-z]+: ]] && continue # a #fragment alone, or a URL
        checked=$((checked + 1))
        if [[ ! -e "$(dirname "$doc")/$target" ]]; then
            echo "$doc: link to '$target', which does not exist" >&2
            failed=1
        fi
    done < <(link_targets "$doc")
done

((failed == 0)) && echo "README.md: $lines lines (at most $k_max_readme_lines); $checked relative links resolve"
exit "$failed"
