# hostile: privilege | become root in a new user namespace with unshare(1)
# expect: exit=73 status=error
# control: docker +security-opt=seccomp=unconfined exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
[ "$(unshare --user --map-root-user id -u 2>&1)" = 0 ] && escaped "uid 0 in a new user namespace"
blocked "unshare refused"
