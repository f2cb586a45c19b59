# hostile: privilege | mount a file system (mount(2) on /tmp/m)
# expect: exit=73 status=error
# control: docker -user -cap-drop +cap-add=SYS_ADMIN exit=42
import ctypes
import os

from _probe import call, errno_name, libc, verdict

os.makedirs("/tmp/m", exist_ok=True)
error = call(libc.mount, b"none", b"/tmp/m", b"tmpfs", ctypes.c_ulong(0), None)
verdict(error == 0, "mounted a tmpfs on /tmp/m" if error == 0 else errno_name(error))
