# hostile: output | print 1 GiB to stdout as fast as possible (the shim's memory and the audit tail stay bounded)
# expect: exit=0 status=ok
# check: flood stdout 1073741824
# control: host exit=0
import sys

chunk = b"A" * (1 << 20)
for _ in range(1024):
    sys.stdout.buffer.write(chunk)
