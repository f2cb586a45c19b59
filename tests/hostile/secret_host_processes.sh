# hostile: secrets | the host's processes and their command lines (a sentinel process the harness started)
# expect: exit=73 status=error
# control: host exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
# The pattern is written so that grep's own command line does not match it.
grep -qs "$SENTINEL_PATTERN" /proc/[0-9]*/cmdline && escaped "saw the host's sentinel process"
set -- /proc/[0-9]*
blocked "$# processes visible, none of the host's"
