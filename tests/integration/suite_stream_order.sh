#!/usr/bin/env bash
# When the caller's stdout and stderr are one file (2>&1 onto a file or a pipe) they stay one
# stream in the order the program wrote them, byte for byte as native, cold and warm (launcher
# and exec); with two files each gets only its own stream; the audit still counts the output.
# sandshim-test-engines: docker podman
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ALTERNATE_PY='import os, sys
for i in range(400):
    os.write(1, b"out %d\n" % i)
    os.write(2, b"err %d\n" % i)
sys.stdout.write("buffered out\n"); sys.stdout.flush()
sys.stderr.write("buffered err\n")
sys.exit(42)'
ALTERNATE_SH='i=0; while [ $i -lt 300 ]; do echo "out $i"; echo "err $i" >&2; i=$((i + 1)); done; exit 42'

# The native output of the program, both streams into one file.
"$HOST_PY" -c "$ALTERNATE_PY" >"$T/native.py" 2>&1 || [[ $? == 42 ]] || fail "native python"
sh -c "$ALTERNATE_SH" >"$T/native.sh" 2>&1 || [[ $? == 42 ]] || fail "native sh"
grep '^out ' "$T/native.py" >"$T/native.py.out"
grep '^err ' "$T/native.py" >"$T/native.py.err"

# Runs COMMAND through the shim with both streams into FILE; exit 42 expected.
run_merged() { # FILE COMMAND...
    local file=$1 rc=0
    shift
    sandshim run -- "$@" >"$file" 2>&1 || rc=$?
    expect_equal 42 "$rc" "exit code of $*"
}

expect_same() { # NATIVE SHIM
    cmp -s "$1" "$2" || fail "$(basename "$2") differs from native: $(diff "$1" "$2" | head -5 | tr '\n' ' ')"
}

check "cold, 2>&1 onto a file: python's alternating writes are native byte for byte"
run_merged "$T/cold.py" python3 -c "$ALTERNATE_PY"
expect_same "$T/native.py" "$T/cold.py"
expect_equal "$(wc -c <"$T/native.py")" "$(audit_field last stdout_bytes)" "stdout_bytes in the row"

check "cold, 2>&1 onto a file: sh's alternating echoes are native byte for byte"
run_merged "$T/cold.sh" sh -c "$ALTERNATE_SH"
expect_same "$T/native.sh" "$T/cold.sh"

check "cold, 2>&1 into one pipe: native byte for byte"
rc=0
sandshim run -- python3 -c "$ALTERNATE_PY" 2>&1 | cat >"$T/pipe.py" || rc=$?
expect_same "$T/native.py" "$T/pipe.py"

check "control: two files each get only their own stream"
expect_exit 42 sandshim run -- python3 -c "$ALTERNATE_PY"
expect_file_is "$OUT" "$(cat "$T/native.py.out")
buffered out"
expect_file_is "$ERR" "$(cat "$T/native.py.err")
buffered err"
expect_equal "$(wc -c <"$ERR")" "$(audit_field last stderr_bytes)" "stderr_bytes in the row"

check "one stream: a limit the program hit still names itself"
rc=0
sandshim run -- sh -c 'touch "$PWD/written"' >"$T/limit.out" 2>&1 || rc=$?
expect_equal 1 "$rc" "exit code of the refused write"
expect_contains "Read-only file system" "$T/limit.out"
expect_contains "sandshim: limit hit: sandbox.workspace" "$T/limit.out"

check "one stream: a host script the image lacks is still one line, exit 127"
printf 'console.log("host only")\n' >"$T/host-only.js"
cp "$T/host-only.js" /usr/local/bin/sandshim-stream-host-only.js 2>/dev/null ||
    skip_or_fail "cannot write /usr/local/bin (run as root)"
rc=0
sandshim run -- node /usr/local/bin/sandshim-stream-host-only.js >"$T/missing.out" 2>&1 || rc=$?
rm -f /usr/local/bin/sandshim-stream-host-only.js
expect_equal 127 "$rc" "exit code"
expect_contains '"/usr/local/bin/sandshim-stream-host-only.js" is a file on the host but not in the image' "$T/missing.out"

for start in launcher exec; do
    check "warm ($start), 2>&1 onto a file: native byte for byte; two files stay apart"
    printf '[pool]\nsize = 1\nidle_ttl = 2m\nstart = %s\n' "$start" | write_user_config
    sandshim pool fill python3 >/dev/null || fail "pool fill failed"
    run_merged "$T/warm-$start.py" python3 -c "$ALTERNATE_PY"
    expect_equal true "$(audit_field last warm)" "warm flag"
    expect_same "$T/native.py" "$T/warm-$start.py"
    sandshim pool fill python3 >/dev/null || fail "pool fill failed"
    expect_exit 42 sandshim run -- python3 -c "$ALTERNATE_PY"
    expect_equal true "$(audit_field last warm)" "warm flag"
    expect_file_is "$ERR" "$(cat "$T/native.py.err")
buffered err"
    sandshim pool drain >/dev/null 2>&1 || true
    sleep 1
    sandshim pool drain >/dev/null 2>&1 || true
done
reset_user_config

suite_done
