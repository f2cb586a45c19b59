# hostile: exec | noexec on /tmp is hygiene: a binary refused in /tmp runs from an anonymous memfd
# expect: exit=42 status=error
# control: none (a documented bypass: the probe itself shows the refusal before the bypass)
import os
import shutil
import subprocess
import sys

from _probe import verdict

shutil.copy("/usr/bin/id", "/tmp/dropped")
try:
    subprocess.run(["/tmp/dropped"], stdout=subprocess.DEVNULL)
    print("/tmp is not noexec: the probe proves nothing")
    sys.exit(3)
except PermissionError:
    print("/tmp/dropped: refused (noexec)")
fd = os.memfd_create("dropped", 0)
with open("/usr/bin/id", "rb") as binary:
    os.write(fd, binary.read())
status = subprocess.run([f"/proc/self/fd/{fd}"], pass_fds=[fd], stdout=subprocess.DEVNULL).returncode
verdict(status == 0, "ran the dropped binary from a memfd")
