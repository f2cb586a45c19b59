#!/usr/bin/env bash
# sandshim-test-engines: docker
# Same results as on the host: real third-party test suites (from Debian packages that ship their
# tests, and npm packages whose published tarballs include them) run natively and through the
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
# The test files node --test runs (one node process each, on one CPU in the sandbox): find-my-way's
# 81 take 18 s natively; @fastify/merge-json-schemas's 40 took 8 s through the shims on a quiet
# machine, which the 4-5 times slowdown seen at CI's load would bring near the 30 s deadline.
FIND_MY_WAY_TESTS=(methods errors pretty-print issue-330 issue-28 issue-17 find-route
    pretty-print-tree compile regex has-route constraint.custom)
MERGE_JSON_SCHEMAS_TESTS=(properties default-resolver if-then-else additional-items
    additional-properties type one-of const unique-items merge-schema items enum default)
DIST=/usr/lib/python3/dist-packages
# Debian's pytest and what it imports, copied beside each project that runs it.
PYTEST_PACKAGES=(pytest _pytest pluggy iniconfig packaging py py.py attr)
# The npm fixtures (install/deps.sh): directory and package.
NPM_FIXTURES=(minimist/tape minimist/minimist json-schema-ref-resolver/json-schema-ref-resolver
    merge-json-schemas/@fastify/merge-json-schemas find-my-way/find-my-way find-my-way/rfdc
    find-my-way/proxyquire)

for fixture in "${NPM_FIXTURES[@]}"; do
    [[ -f $FIXTURES/${fixture%%/*}/node_modules/${fixture#*/}/package.json ]] ||
        skip_or_fail "the npm fixture ${fixture#*/} is missing from $FIXTURES/${fixture%%/*} (run install/deps.sh)"
done
for dir in $DIST/{mpmath/tests,_pytest,pyflakes/test,simplejson/tests,toolz/tests,tlz,bs4/tests,soupsieve} \
    $DIST/{zope/interface/tests,pkg_resources,pyflakes-2.5.0.egg-info} /usr/lib/python3.11/test/test_json; do
    [[ -d $dir ]] || skip_or_fail "$dir is missing (run install/deps.sh)"
done
[[ -x /usr/bin/pyflakes3 ]] || skip_or_fail "/usr/bin/pyflakes3 is missing (run install/deps.sh)"
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
        # node --test, TAP when stdout is no terminal
        node-test) grep -E '^# (tests|suites|pass|fail|cancelled|skipped|todo) ' "$2" | tr '\n' ' ' ;;
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

# Copies Debian's PACKAGES (dist-packages) into the workspace's DIR, Debian's pytest into its
# vendor/ with --pytest, so the sandbox (whose image has neither) runs the very same code. Copied
# with their times (cp -a): Debian's .pyc stay valid, so the native side (whose workspace is
# writable) does not compile what the shim's reuses.
copy_python_project() { # DIR [--pytest] PACKAGE...
    local dir=$WS/$1 pkg
    shift
    mkdir -p "$dir/vendor"
    if [[ $1 == --pytest ]]; then
        shift
        for pkg in "${PYTEST_PACKAGES[@]}"; do cp -a "$DIST/$pkg" "$dir/vendor/"; done
    fi
    for pkg in "$@"; do cp -a "$DIST/$pkg" "$dir/"; done
}

# Copies an npm fixture's PACKAGE into the workspace's DIR, with the fixture's node_modules as its own.
copy_npm_project() { # DIR FIXTURE PACKAGE
    cp -r "$FIXTURES/$2/node_modules/$3" "$WS/$1"
    cp -r "$FIXTURES/$2/node_modules" "$WS/$1/node_modules"
}

printf '| project | runner | native tests, time | shim tests, time | ratio |\n|---|---|---|---|---|\n' >"$TABLE"

# Python projects' own tests as Debian ships them, with Debian's pytest or unittest.
copy_python_project mpmath --pytest mpmath
compare mpmath pytest "$WS/mpmath" env PYTHONPATH=vendor python3 -m pytest -q -p no:cacheprovider \
    "${MPMATH_TESTS[@]/#/mpmath/tests/}"
# Its integration tests start the pyflakes script from bin/, which finds its entry point in the
# egg-info. test_permissionDenied skips as root, whose calls the sandbox runs as nobody: left out.
copy_python_project pyflakes --pytest pyflakes pyflakes-2.5.0.egg-info
mkdir -p "$WS/pyflakes/bin"
cp -a /usr/bin/pyflakes3 "$WS/pyflakes/bin/pyflakes"
compare pyflakes pytest "$WS/pyflakes" env PYTHONPATH=vendor python3 -m pytest -q -p no:cacheprovider \
    --deselect pyflakes/test/test_api.py::CheckTests::test_permissionDenied pyflakes/test
# setup.py's test suite: every test with the C speedups and without.
copy_python_project simplejson simplejson
compare simplejson unittest "$WS/simplejson" python3 -m unittest simplejson.tests.all_tests_suite
copy_python_project toolz --pytest toolz tlz
compare toolz pytest "$WS/toolz" env PYTHONPATH=vendor python3 -m pytest -q -p no:cacheprovider toolz/tests
# -S (no site): optional parsers and encoding detectors (lxml, html5lib, chardet) that a host may
# have and the image lacks stay out of both sides; their tests skip on both.
copy_python_project bs4 --pytest bs4 soupsieve
compare bs4 pytest "$WS/bs4" env PYTHONPATH=vendor python3 -S -m pytest -q -p no:cacheprovider bs4/tests
# zope is a pkg_resources namespace that the host's nspkg.pth imports from dist-packages at startup:
# -S (no site) keeps both sides on the copy. test_ro needs zope.testing, which Debian's package lacks.
copy_python_project zope.interface --pytest zope
cp -a "$DIST/pkg_resources" "$WS/zope.interface/vendor/"
compare zope.interface pytest "$WS/zope.interface" env PYTHONPATH=vendor python3 -S -m pytest -q \
    -p no:cacheprovider --ignore=zope/interface/tests/test_ro.py zope/interface/tests

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
copy_npm_project minimist minimist minimist
compare minimist tape "$WS/minimist" node node_modules/tape/bin/tape 'test/**/*.js'
compare minimist-npx tape "$WS/minimist" npx tape 'test/**/*.js'

# Runs node --test in the workspace's PROJECT over test/NAME.test.js for each NAME (every test
# file when none), both ways: the packages' test:unit script without its coverage (c8).
compare_node_test() { # PROJECT NAME...
    local project=$1 files
    shift
    files=("${@/#/test/}")
    compare "$project" node-test "$WS/$project" node --test "${files[@]/%/.test.js}"
}

copy_npm_project json-schema-ref-resolver json-schema-ref-resolver json-schema-ref-resolver
compare_node_test json-schema-ref-resolver
copy_npm_project merge-json-schemas merge-json-schemas @fastify/merge-json-schemas
compare_node_test merge-json-schemas "${MERGE_JSON_SCHEMAS_TESTS[@]}"
# find-my-way's engines.node is ">=20" and the image's node is 18 (on which its tests fail):
# sandbox.version_fit runs the host's node instead and says so; host mode needs no such line.
copy_npm_project find-my-way find-my-way find-my-way
compare_node_test find-my-way "${FIND_MY_WAY_TESTS[@]}"
fit_line="package.json (engines.node) asks for node \">=20\" and sandshim/node:bookworm has node"
if [[ $IMAGES_MODE == host ]]; then
    expect_not_contains "$fit_line" "$T/find-my-way.shim"
else
    expect_contains "$fit_line" "$T/find-my-way.shim"
    expect_contains "this run uses the host's node, read-only in the sandbox" "$T/find-my-way.shim"
fi

check "audit verify is ok after the suites"
expect_exit 0 sandshim audit verify

say "table:"
cat "$TABLE" >&2
[[ -z ${SANDSHIM_SUITES_TABLE:-} ]] || cp "$TABLE" "$SANDSHIM_SUITES_TABLE"
suite_done
