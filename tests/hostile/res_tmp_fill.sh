# hostile: resources | fill /tmp past its cap: 100 MiB into a 64 MiB tmpfs
# expect: exit=73 status=error
# control: policy sandbox.tmp_size=128m exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
# dd reports on stdout: a full /tmp leaves no room for anything else.
dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1 && escaped "wrote 100 MiB to /tmp"
blocked "stopped at $(stat -c %s /tmp/fill) bytes"
