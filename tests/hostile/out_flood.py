# hostile: output | print 2 GiB to stdout as fast as possible (the shim's memory and the audit tail stay bounded)
# expect: exit=0 status=ok
# check: flood stdout 2147483648
# control: host exit=0
import sys

chunk = b"A" * (1 << 20)
for _ in range(2048):
    sys.stdout.buffer.write(chunk)
