# hostile: lifecycle | ignore SIGTERM and keep running; the harness sends SIGTERM to the shim after 1.5 s
# expect: exit=143 status=killed
# signal: TERM 1.5
# control: host signal=TERM@1 deadline=2 exit=137
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ignoring SIGTERM", flush=True)
while True:
    time.sleep(1)
