# hostile: resources | a fork bomb (every process forks forever); its peak, counted until past the cap or 2 s without a new peak
# expect: exit=73 status=error
# control: policy sandbox.pids=256 sandbox.memory=2g exit=42
import os
import signal
import time

from _probe import verdict

CAP = 64  # the default sandbox.pids
# The bomb is counted until it passes the cap, or has made no new peak for PLATEAU seconds (it
# is at a cap), or for MOST seconds at most. Under runsc (gVisor's ptrace platform) forks are
# slow: after a fixed 2 s the control's bomb (cap 256) had 28 processes on a loaded machine. The
# control lifts the memory cap too: under runsc 66 Python processes passed 512 MiB (gVisor's
# memory per process), and the whole sandbox was killed (137) before the verdict.
PLATEAU, MOST = 2.0, 30.0


def processes():
    return sum(1 for entry in os.listdir("/proc") if entry.isdigit())


bomb = os.fork()
if bomb == 0:
    os.setpgid(0, 0)  # one process group, so the probe can end the bomb (and only it)
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)
started = peak_at = time.monotonic()
peak = 0
while peak <= CAP and time.monotonic() - peak_at < PLATEAU and time.monotonic() - started < MOST:
    time.sleep(0.1)
    count = processes()
    if count > peak:
        peak, peak_at = count, time.monotonic()
os.killpg(bomb, signal.SIGKILL)
verdict(peak > CAP, f"{peak} processes at the peak of the bomb")
