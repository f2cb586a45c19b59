# hostile: privilege | run a setuid-root binary (id, made setuid root by the harness in the workspace)
# expect: exit=73 status=error
# control: docker -security-opt exit=42
# requires: root
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
ls -l ../bin/suid-id
../bin/suid-id | grep 'euid=0' && escaped "the setuid bit made us root"
blocked "the setuid bit was ignored: $(../bin/suid-id)"
