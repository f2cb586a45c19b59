# hostile: privilege | mount a file system with the image's setuid mount(8)
# expect: exit=73 status=error
# control: docker -user -cap-drop +cap-add=SYS_ADMIN exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
mkdir -p /tmp/m
mount -t tmpfs none /tmp/m 2>&1 && escaped "mount(8) mounted a tmpfs"
blocked "mount(8) refused"
