# hostile: resources | a memory bomb: 768 MiB, touched, in 64 MiB blocks (the default cap is 512 MiB)
# expect: exit=137 status=oom
# gap: podman exit=137 status=killed | podman 4.3 on cgroup v1 reports the kill by the memory cap as a plain kill (the run is killed, not oom)
# control: policy sandbox.memory=1g exit=42
from _probe import verdict

blocks = []
for _ in range(12):
    block = bytearray(64 << 20)
    block[::4096] = b"\x01" * (16 << 10)  # touch every page
    blocks.append(block)
verdict(True, f"held {len(blocks) * 64} MiB")
