# hostile: resources | exhaust file descriptors: open /dev/null 4000 times (the default limit is 1024)
# expect: exit=73 status=error
# control: policy sandbox.nofile=8192 exit=42
import os

from _probe import verdict

fds = []
try:
    while len(fds) < 4000:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    verdict(False, f"{e.strerror} after {len(fds)} descriptors")
verdict(True, "opened 4000 descriptors")
