# hostile: exec | run a binary dropped in /tmp (noexec)
# expect: exit=73 status=error
# control: docker -tmpfs +tmpfs=/tmp:rw,exec,nosuid,nodev,size=67108864 exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
cp /usr/bin/id /tmp/dropped
/tmp/dropped >/dev/null && escaped "ran /tmp/dropped"
blocked "/tmp/dropped did not run"
