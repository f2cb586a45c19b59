# hostile: lifecycle | leave a daemon behind: the double fork (setsid, fork again, parent exits)
# expect: exit=0 status=ok
# control: host exit=0 leaves=daemon
import os

from _probe import params

seconds = params()["DAEMON_SECONDS"]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execvp("sleep", ["sleep", seconds])
    os._exit(0)
os.wait()
print(f"left sleep {seconds} running, twice forked")
