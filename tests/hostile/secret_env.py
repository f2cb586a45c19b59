# hostile: secrets | a token from the environment: os.environ, then every /proc/*/environ
# expect: exit=73 status=error
# control: host exit=42
import glob
import os

from _probe import verdict

found = [name for name, value in os.environ.items() if value.startswith("canary-")]
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        with open(path, "rb") as f:
            if b"=canary-" in f.read():
                found.append(path)
    except OSError:
        pass
verdict(bool(found), "found " + " ".join(found) if found else "no canary in any environment")
