# hostile: output | print 256 MiB of lines to stdout from the shell (yes | head)
# expect: exit=0 status=ok
# check: flood stdout 268435456
# control: host exit=0
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
yes 'all work and no play makes jack a dull boy' | head -c 268435456
