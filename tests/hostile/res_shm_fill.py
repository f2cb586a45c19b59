# hostile: resources | fill /dev/shm past its cap: 32 MiB into a 16 MiB tmpfs
# expect: exit=73 status=error
# control: policy sandbox.shm_size=64m exit=42
import os

from _probe import verdict

try:
    with open("/dev/shm/fill", "wb") as f:
        for _ in range(32):
            f.write(b"\x01" * (1 << 20))
except OSError as e:
    verdict(False, f"{e.strerror} after {os.stat('/dev/shm/fill').st_size} bytes")
verdict(True, "wrote 32 MiB to /dev/shm")
