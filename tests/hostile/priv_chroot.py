# hostile: privilege | chroot (the first step of the classic chroot escapes)
# expect: exit=73 status=error
# control: docker -user -cap-drop exit=42
import os

from _probe import verdict

try:
    os.chroot("/tmp")
except OSError as e:
    verdict(False, e.strerror)
verdict(True, "chrooted into /tmp")
