# hostile: exec | run a binary dropped in /tmp through the dynamic loader (ld.so /tmp/x)
# expect: exit=73 status=error
# gap: runsc exit=42 status=error | gVisor (Debian's runsc, 2022) refuses execve from the noexec /tmp but not an executable mapping of a file there: ld.so runs it
# control: docker -tmpfs +tmpfs=/tmp:rw,exec,nosuid,nodev,size=67108864 exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
cp /usr/bin/id /tmp/dropped
/lib64/ld-linux-x86-64.so.2 /tmp/dropped >/dev/null && escaped "ld.so ran /tmp/dropped"
blocked "ld.so could not map /tmp/dropped"
