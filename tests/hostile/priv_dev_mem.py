# hostile: privilege | open the host's physical memory and kernel log devices (/dev/mem, /dev/kmsg; nothing is read)
# expect: exit=73 status=error
# control: host exit=42
# requires: root
import os

from _probe import verdict

opened = []
for device in ("/dev/mem", "/dev/kmsg"):
    try:
        os.close(os.open(device, os.O_RDONLY))
        opened.append(device)
    except OSError as e:
        print(f"{device}: {e.strerror}")
verdict(bool(opened), "opened " + " ".join(opened))
