# hostile: privilege | run a binary with file capabilities (cat with cap_dac_override) to read /etc/shadow
# expect: exit=73 status=error
# control: docker -security-opt -cap-drop exit=42
# requires: root
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
../bin/cap-cat /etc/shadow >/dev/null && escaped "read /etc/shadow through a file capability"
blocked "the file capability was not granted"
