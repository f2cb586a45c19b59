# hostile: exec | noexec on /tmp is hygiene: ./x.sh is refused, but `sh /tmp/x.sh` runs the same script
# expect: exit=42 status=error
# control: none (a documented bypass: the probe itself shows the refusal before the bypass)
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
printf '#!/bin/sh\nexit 0\n' >/tmp/x.sh
chmod 755 /tmp/x.sh
/tmp/x.sh 2>/dev/null && { echo "/tmp is not noexec: the probe proves nothing"; exit 3; }
sh /tmp/x.sh && escaped "sh /tmp/x.sh ran what /tmp/x.sh could not"
blocked "sh /tmp/x.sh did not run"
