#!/usr/bin/env bash
# The README stays a guide a newcomer reads top to bottom (at most 250 lines; the reference lives in
# docs/), and every relative link in README.md and docs/*.md names a file that exists (and, for a
# markdown file, a heading its #fragment names), so moving a section cannot leave a dead link.
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

# The targets of [text](target) outside fenced code blocks, one a line: FILE or FILE#FRAGMENT.
link_targets() {
    awk '/^```/ { fenced = !fenced; next } !fenced' "$1" |
        grep -oE '\]\([^) ]+\)' | sed -E 's/^\]\(//; s/\)$//' || true
}

# The fragments a markdown file's headings get, as GitHub makes them: lower case, punctuation
# dropped, spaces as hyphens.
heading_anchors() {
    awk '/^```/ { fenced = !fenced; next } !fenced && /^#+ /' "$1" |
        sed -E 's/^#+ +//' | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

checked=0
for doc in README.md docs/*.md; do
    while IFS= read -r link; do
        [[ $link =~ ^[a-z]+: ]] && continue # a URL
        target=${link%%#*}
        fragment=""
        [[ $link == *#* ]] && fragment=${link#*#}
        [[ -n $target ]] || target=$(basename "$doc")
        checked=$((checked + 1))
        file="$(dirname "$doc")/$target"
        if [[ ! -e $file ]]; then
            echo "$doc: link to '$link', whose file does not exist" >&2
            failed=1
        elif [[ -n $fragment && $file == *.md ]] && ! heading_anchors "$file" | grep -qxF -- "$fragment"; then
            echo "$doc: link to '$link', but $target has no heading with that anchor" >&2
            failed=1
        fi
    done < <(link_targets "$doc")
done

((failed == 0)) && echo "README.md: $lines lines (at most $k_max_readme_lines); $checked relative links resolve"
exit "$failed"
