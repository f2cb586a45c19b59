#!/usr/bin/env bash
# The shims: `sandshim install` links python, python3, node and sh to the binary; called by
# those names from PATH they run in containers (argv untouched, audit rows say how they were
# invoked); `sandshim env` puts them first on PATH; the engine lookup never finds sandshim itself;
# uninstall removes exactly the links; SANDSHIM_DRY_RUN=1 prints the engine command, runs nothing.
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

D=$T/shims
SYSTEM_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

check "sandshim install --dir D links python, python3, node and sh to the binary"
expect_exit 0 sandshim install --dir "$D"
for name in python python3 node sh; do
    expect_equal "$SANDSHIM_BIN" "$(readlink "$D/$name")" "link $D/$name"
    expect_contains "linked $D/$name -> $SANDSHIM_BIN" "$OUT"
done
expect_exit 0 sandshim install --dir "$D" # again: nothing to do, no error

check "install replaces a link to another sandshim binary (a build tree's, since removed) and refuses anything else"
O=$T/other-shims
mkdir -p "$O"
ln -s /nonexistent/build/sandshim "$O/python"
ln -s /bin/true "$O/node"
expect_exit 125 sandshim install --dir "$O"
expect_contains "\"$O/node\" exists and is not sandshim's link; remove it first" "$ERR"
expect_equal /bin/true "$(readlink "$O/node")" "the foreign link"
rm "$O/node"
expect_exit 0 sandshim install --dir "$O"
expect_contains "linked $O/python -> $SANDSHIM_BIN (was -> /nonexistent/build/sandshim)" "$OUT"
expect_equal "$SANDSHIM_BIN" "$(readlink "$O/python")" "the replaced link"

check "control: without the shims, sh runs on the host (hostname is not sandbox)"
[[ $(PATH=$SYSTEM_PATH sh -c hostname) != sandbox ]] || fail "the host is called sandbox: the check below would prove nothing"

check "python, python3, node and sh from D run in containers and are audited as invoked"
before=$(run_count)
PATH=$D:$PATH expect_exit 0 python -c 'import socket; print(socket.gethostname())'
expect_file_is "$OUT" sandbox
PATH=$D:$PATH expect_exit 0 python3 -c 'import socket; print(socket.gethostname())'
expect_file_is "$OUT" sandbox
PATH=$D:$PATH expect_exit 0 node -e 'console.log(require("os").hostname())'
expect_file_is "$OUT" sandbox
PATH=$D:$PATH expect_exit 0 sh -c hostname
expect_file_is "$OUT" sandbox
expect_equal $((before + 4)) "$(run_count)" "rows after four shim runs"
audit_cmd sql "SELECT invoked_as, image, status FROM runs ORDER BY start_ms DESC LIMIT 4" --jsonl |
    "$HOST_PY" -c 'import json, sys
for line in reversed(sys.stdin.readlines()):
    row = json.loads(line)
    print(row["invoked_as"], row["image"], row["status"])' >"$T/rows"
expect_file_is "$T/rows" "python sandshim/python:bookworm ok
python3 sandshim/python:bookworm ok
node sandshim/node:bookworm ok
sh sandshim/sh:bookworm ok"

check "in shim mode argv belongs to the program: sandshim-like options pass through untouched"
PATH=$D:$PATH expect_exit 0 sh -c 'printf "[%s]" "$@"' zero --help --image x --timeout 1s -- 'a b'
expect_file_is "$OUT" "[--help][--image][x][--timeout][1s][--][a b]"

check "a shim never finds itself: PATH is D and system dirs, and a docker link to sandshim is skipped"
mkdir -p "$T/selfbin"
ln -s "$SANDSHIM_BIN" "$T/selfbin/docker"
expect_equal "$T/selfbin/docker" "$(PATH=$T/selfbin:$SYSTEM_PATH command -v docker)" \
    "control: docker on a PATH that starts with selfbin"
printf '[engine]\nsearch_path = %s:%s:%s\n' "$T/selfbin" "$D" "$SYSTEM_PATH" | write_user_config
PATH=$D:$SYSTEM_PATH expect_exit 0 sh -c hostname
expect_file_is "$OUT" sandbox
PATH=$D:$SYSTEM_PATH SANDSHIM_DRY_RUN=1 expect_exit 0 sh -c hostname
engine_client=$(cut -d' ' -f1 "$OUT")
expect_equal "$(readlink -f "$DOCKER")" "$(readlink -f "$engine_client")" "engine client"
reset_user_config

check "SANDSHIM_DRY_RUN=1 python -c pass prints the engine command line and runs nothing"
before=$(run_count)
PATH=$D:$PATH SANDSHIM_DRY_RUN=1 expect_exit 0 python -c pass
expect_lines 1 "$OUT"
for word in " run " "--network=none" "--cap-drop=ALL" "--read-only" " sandshim/python:bookworm python -c pass"; do
    expect_contains "$word" "$OUT"
done
expect_equal "$before" "$(run_count)" "rows after a dry run"
name=$(grep -o -- '--name=sandshim-[0-9a-f]*' "$OUT" | cut -d= -f2)
[[ -n $name ]] || fail "no container name in the dry-run line"
! container_exists "$name" || fail "the dry run created $name"

check "sandshim env prints a line that, eval'd, puts the default shim directory first on PATH"
expect_exit 0 sandshim install
expect_exit 0 sandshim env
expect_lines 1 "$OUT"
expect_contains "export PATH=" "$OUT"
expect_contains "$XDG_DATA_HOME/sandshim/bin" "$OUT"
expect_equal "$XDG_DATA_HOME/sandshim/bin/python3" "$(eval "$(sandshim env)" && command -v python3)" "python3 after eval"
(eval "$(sandshim env)" && expect_exit 42 python3 -c 'import sys; sys.exit(42)')
expect_exit 0 sandshim env --shell fish
expect_contains "set -gx PATH " "$OUT"
expect_contains "$XDG_DATA_HOME/sandshim/bin" "$OUT"

check "sandshim uninstall --dir D removes exactly the links it made"
echo foreign >"$D/foreign.txt"
ln -s /bin/true "$D/ruby"
expect_exit 0 sandshim uninstall --dir "$D"
for name in python python3 node sh; do
    [[ ! -e $D/$name && ! -L $D/$name ]] || fail "$D/$name is still there"
done
[[ -f $D/foreign.txt && -L $D/ruby ]] || fail "uninstall removed a file it did not create: $(ls -la "$D")"
expect_exit 0 sandshim uninstall

suite_done
