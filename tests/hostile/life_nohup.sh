# hostile: lifecycle | leave a daemon behind: nohup sleep & (the command returns at once)
# expect: exit=0 status=ok
# control: host exit=0 leaves=daemon
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
nohup sleep "$DAEMON_SECONDS" >/dev/null 2>&1 &
echo "left sleep $DAEMON_SECONDS running as $!"
