# hostile: privilege | open /proc/sysrq-trigger for writing (crash, reboot or sync the host; nothing is written)
# expect: exit=73 status=error
# control: host exit=42
# requires: root /proc/sysrq-trigger
import os

from _probe import verdict

try:
    os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY))
except OSError as e:
    verdict(False, e.strerror)
verdict(True, "opened /proc/sysrq-trigger for writing")
