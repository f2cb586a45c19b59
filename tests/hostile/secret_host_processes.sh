# hostile: secrets | the host's processes and their command lines (a sentinel process the harness started)
# expect: exit=73 status=error
# control: host exit=42
. ./_probe.sh
# The pattern is written so that grep's own command line does not match it.
grep -qs "$SENTINEL_PATTERN" /proc/[0-9]*/cmdline && escaped "saw the host's sentinel process"
blocked "$(ls -d /proc/[0-9]* | wc -l) processes visible, none of the host's"
