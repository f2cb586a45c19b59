# hostile: secrets | an SSH private key: ~/.ssh, /root/.ssh, /home/*/.ssh, the host's home by path and by ../
# expect: exit=73 status=error
# control: host exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
for key in "$HOME"/.ssh/* /root/.ssh/* /home/*/.ssh/* "$HOST_HOME"/.ssh/* ../../home/.ssh/*; do
    grep -qs canary- "$key" && escaped "read $key"
done
blocked "no key readable"
