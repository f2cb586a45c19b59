# hostile: privilege | create a block device node for the host's disk (mknod b 8 0)
# expect: exit=73 status=error
# gap: runsc exit=42 status=error | gVisor (Debian's runsc, 2022) lets the sandbox user make a block device node in its own /tmp without CAP_MKNOD; the node leads to no host device (gVisor passes none through)
# control: docker -user -cap-drop +cap-add=MKNOD exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
mknod /tmp/sda b 8 0 2>&1 && escaped "created a block device node"
blocked "mknod refused"
