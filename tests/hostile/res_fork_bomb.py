# hostile: resources | a fork bomb (every process forks forever); after 2 s, count the processes
# expect: exit=73 status=error
# control: policy sandbox.pids=256 exit=42
import os
import signal
import time

from _probe import verdict

CAP = 64  # the default sandbox.pids

bomb = os.fork()
if bomb == 0:
    os.setpgid(0, 0)  # one process group, so the probe can end the bomb (and only it)
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)
time.sleep(2)
count = sum(1 for entry in os.listdir("/proc") if entry.isdigit())
os.killpg(bomb, signal.SIGKILL)
verdict(count > CAP, f"{count} processes at the peak of the bomb")
