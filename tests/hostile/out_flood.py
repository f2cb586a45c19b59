# hostile: output | print 1 GiB to stdout as fast as possible (the shim's memory and the audit tail stay bounded)
# expect: exit=0 status=ok
# check: flood stdout 1073741824
# control: host exit=0
import os

# A buffered stream, whatever PYTHONUNBUFFERED says: it writes the rest of a short write. Under
# runsc a write to stdout can be short, and an unbuffered stream (sys.stdout.buffer under -u)
# drops the rest (suite_gvisor's short-write check); this probe floods, it does not test that.
out = os.fdopen(1, "wb", buffering=1 << 16, closefd=False)
chunk = b"A" * (1 << 20)
for _ in range(1024):
    out.write(chunk)
out.flush()
