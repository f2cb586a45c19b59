# hostile: resources | the classic shell fork bomb, counted with builtins only (no fork is left to spare)
# expect: exit=73 status=error
# control: policy sandbox.pids=256 exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
# shellcheck disable=SC2264 # a fork bomb, on purpose
bomb() { bomb | bomb & }
{ bomb; } 2>/dev/null & # one fork: the shell exits if a fork of its own fails
most=0
rounds=0
while [ $rounds -lt 300 ]; do
    set -- /proc/[0-9]*
    [ $# -gt $most ] && most=$#
    rounds=$((rounds + 1))
done
[ $most -gt 64 ] && escaped "$most processes"
blocked "at most $most processes"
