# hostile: resources | a memory bomb: 768 MiB, touched, in 64 MiB blocks (the default cap is 512 MiB)
# expect: exit=137 status=oom
# control: policy sandbox.memory=1g exit=42
from _probe import verdict

blocks = [bytearray(b"\x01" * (64 << 20)) for _ in range(12)]
verdict(True, f"held {len(blocks) * 64} MiB")
