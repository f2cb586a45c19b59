# hostile: lifecycle | a busy loop that ignores SIGTERM, past its deadline (3 s)
# expect: exit=124 status=timeout
# policy: sandbox.timeout=3s
# control: host signal=TERM@1 deadline=2 exit=137
# shellcheck shell=sh
trap '' TERM
while :; do :; done
