# hostile: secrets | a token from the environment (env, and the environ of every visible process)
# expect: exit=73 status=error
# control: host exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
env | grep -q '=canary-' && escaped "a canary in env"
cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -q '=canary-' && escaped "a canary in /proc/*/environ"
blocked "no canary in any environment"
