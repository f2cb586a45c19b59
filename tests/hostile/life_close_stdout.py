# hostile: lifecycle | close stdout and stderr, then keep running (a caller waiting for EOF would return early)
# expect: exit=124 status=timeout
# policy: sandbox.timeout=3s
# control: host deadline=2 exit=137
import os
import time

print("closing stdout and stderr", flush=True)
os.close(1)
os.close(2)
while True:
    time.sleep(1)
