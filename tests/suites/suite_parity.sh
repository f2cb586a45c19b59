#!/usr/bin/env bash
# sandshim-test-engines: docker
# Same results as on the host: real third-party test suites (from Debian packages that ship their
# tests, and an npm package whose published tarball includes them) run natively and through the
# shims, typed exactly the same, with the default policy. Fails when an exit code or a test count
# differs. Prints the table (project, runner, native tests and time, shim tests and time, ratio)
# and writes it to $SANDSHIM_SUITES_TABLE when set. The fixtures come from install/deps.sh
# (SANDSHIM_SUITES_DIR, default /var/tmp/sandshim/suites). SANDSHIM_PARITY_IMAGES=host runs the
# shim side in host mode (images.python3/node = host; suite_parity_host.sh, CTest docker.parity_host).
# shellcheck source=../integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

D=$T/shims
SYSTEM_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
FIXTURES=${SANDSHIM_SUITES_DIR:-/var/tmp/sandshim/suites}
TABLE=$T/table.md
# The CPython modules run (test_threading is left out: it hangs in a container, not at a limit).
CPYTHON_TESTS=(test_json test_textwrap test_bisect test_heapq test_fractions)
# The mpmath test files run (the whole suite takes minutes).
MPMATH_TESTS=(test_basic_ops.py test_bitwise.py test_convert.py test_division.py test_str.py)

[[ -d $FIXTURES/minimist/node_modules/tape ]] ||
    skip_or_fail "no npm fixtures in $FIXTURES (run install/deps.sh)"
for dir in /usr/lib/python3/dist-packages/mpmath/tests /usr/lib/python3.11/test/test_json \
    /usr/lib/python3/dist-packages/_pytest; do
    [[ -d $dir ]] || skip_or_fail "$dir is missing (run install/deps.sh)"
done
sandshim install --dir "$D" >/dev/null
IMAGES_MODE=${SANDSHIM_PARITY_IMAGES:-default}
# The suite's config: host mode's image lines (SANDSHIM_PARITY_IMAGES=host) before stdin's.
policy() {
    {
        [[ $IMAGES_MODE != host ]] || printf '[images]\npython3 = host\nnode = host\n'
        cat
    } | write_user_config
}
policy </dev/null
say "image mode: $IMAGES_MODE"

# The summary a runner prints, without its timing: what must be the same on both sides. Empty
# when the runner printed none (grep finds nothing): compare fails on an empty native summary, and
# an empty shim summary differs from the native one.
summary() { # RUNNER OUTPUT-FILE
    { case $1 in
        pytest) grep -E '^[0-9]+ (passed|failed)' "$2" | tail -n 1 | sed -E 's/ in [0-9.]+s.*$//' ;;
        unittest) grep -E '^(Ran [0-9]+ test|OK|FAILED)' "$2" | sed -E 's/ in [0-9.]+s$//' | tr '\n' ' ' ;;
        tape) grep -E '^# (tests|pass|fail) ' "$2" | tr '\n' ' ' ;;
    esac; } || true
}

# The count of tests a summary reports.
count_of() { grep -oE '[0-9]+' <<<"$1" | head -n 1; }

# Runs CMD in DIR natively, then through the shims (PATH alone differs), and compares.
compare() { # PROJECT RUNNER DIR CMD...
    local project=$1 runner=$2 dir=$3 native_rc=0 shim_rc=0 t0 native_ms shim_ms native shim
    shift 3
    check "$project ($runner): the same result natively and through the shims"
    t0=$EPOCHREALTIME
    (cd "$dir" && PATH=$SYSTEM_PATH "$@") >"$T/$project.native" 2>&1 || native_rc=$?
    native_ms=$(ms_since "$t0")
    t0=$EPOCHREALTIME
    (cd "$dir" && PATH=$D:$SYSTEM_PATH "$@") >"$T/$project.shim" 2>&1 || shim_rc=$?
    shim_ms=$(ms_since "$t0")
    native=$(summary "$runner" "$T/$project.native")
    shim=$(summary "$runner" "$T/$project.shim")
    [[ -n $native ]] || fail "no $runner summary natively (exit $native_rc): $(tail -n 5 "$T/$project.native")"
    expect_equal "$native" "$shim" "$project's summary through the shims"
    expect_equal "$native_rc" "$shim_rc" "$project's exit code through the shims"
    awk -v p="$project" -v r="$runner" -v nc="$(count_of "$native")" -v sc="$(count_of "$shim")" \
        -v n="$native_ms" -v s="$shim_ms" \
        'BEGIN { printf "| %s | %s | %s in %.1f s | %s in %.1f s | %.2f |\n", p, r, nc, n / 1000, sc, s / 1000, s / n }' >>"$TABLE"
}

printf '| project | runner | native tests, time | shim tests, time | ratio |\n|---|---|---|---|---|\n' >"$TABLE"

# mpmath's own tests with Debian's pytest, both copied into the workspace so the sandbox (whose
# image has neither) runs the very same code. Copied with their times (cp -a): Debian's .pyc stay
# valid, so the native side (whose workspace is writable) does not compile what the shim's reuses.
mkdir -p "$WS/mpmath/vendor"
cp -a /usr/lib/python3/dist-packages/mpmath "$WS/mpmath/"
for pkg in pytest _pytest pluggy iniconfig packaging py py.py attr; do
    cp -a "/usr/lib/python3/dist-packages/$pkg" "$WS/mpmath/vendor/"
done
compare mpmath pytest "$WS/mpmath" env PYTHONPATH=vendor python3 -m pytest -q -p no:cacheprovider \
    "${MPMATH_TESTS[@]/#/mpmath/tests/}"

# CPython's own test suite (libpython3.11-testsuite), selected modules, with its support package.
mkdir -p "$WS/cpython/test"
cp -a /usr/lib/python3.11/test/{__init__.py,support,lock_tests.py} "$WS/cpython/test/"
for module in "${CPYTHON_TESTS[@]}"; do
    cp -a /usr/lib/python3.11/test/"$module"* "$WS/cpython/test/"
done
# Its json tool tests write files into the cwd: under the default read-only workspace they fail,
# and the run names the key and the line that lifts it; with that line the results match.
check "cpython under the read-only workspace: the refused writes name sandbox.workspace"
rc=0
(cd "$WS/cpython" && PATH=$D:$SYSTEM_PATH python3 -m unittest test.test_json.test_tool) >"$T/ro.out" 2>&1 || rc=$?
expect_equal 1 "$rc" "exit code of test_json.test_tool under a read-only workspace"
expect_contains "Read-only file system" "$T/ro.out"
expect_contains "sandshim: limit hit: sandbox.workspace = ro (a write to the read-only workspace was refused); to lift it, add \`sandbox.workspace = rw\` to $XDG_CONFIG_HOME/sandshim/config" "$T/ro.out"
expect_equal sandbox.workspace "$(audit_field "$(last_run_id)" limit_hit)" "the audit row's limit_hit"
# The tool tests write into the cwd as the sandbox's user (65534); a loaded CI machine needs more
# than the default 30 s deadline for the whole selection.
chmod 1777 "$WS/cpython"
printf '[sandbox]\nworkspace = rw\ntimeout = 5m\n' | policy
compare cpython unittest "$WS/cpython" python3 -m unittest "${CPYTHON_TESTS[@]/#/test.}"
policy </dev/null

# minimist's published tests with tape, through node and through npx (a #!/usr/bin/env node
# script on the host: the shim runs it as `node /usr/bin/npx`, the image's own npx).
cp -r "$FIXTURES/minimist/node_modules/minimist" "$WS/minimist"
cp -r "$FIXTURES/minimist/node_modules" "$WS/minimist/node_modules"
compare minimist tape "$WS/minimist" node node_modules/tape/bin/tape 'test/**/*.js'
compare minimist-npx tape "$WS/minimist" npx tape 'test/**/*.js'

check "audit verify is ok after the suites"
expect_exit 0 sandshim audit verify

say "table:"
cat "$TABLE" >&2
[[ -z ${SANDSHIM_SUITES_TABLE:-} ]] || cp "$TABLE" "$SANDSHIM_SUITES_TABLE"
suite_done
