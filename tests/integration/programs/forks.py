# Forks sleeping children until 100 (exit 73) or until fork fails: 42 for EAGAIN. Prints the count.
import errno, os, sys, time
children = []
code = 73
try:
    while len(children) < 100:
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
except OSError as e:
    code = 42 if e.errno == errno.EAGAIN else 1
    print(errno.errorcode.get(e.errno, e.errno), file=sys.stderr)
print(len(children))
for pid in children:
    os.kill(pid, 9)
sys.exit(code)
