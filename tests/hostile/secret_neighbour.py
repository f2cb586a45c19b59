# hostile: secrets | a neighbouring project's .env beside the workspace (../neighbour/.env), by ../ and by path
# expect: exit=73 status=error
# control: host exit=42
import os

from _probe import params, verdict

for path in ("../../neighbour/.env", os.path.join(params()["HOST_NEIGHBOUR"], ".env")):
    try:
        with open(path) as f:
            if "canary-" in f.read():
                verdict(True, "read " + path)
    except OSError as e:
        print(f"{path}: {e.strerror}")
verdict(False, "no neighbouring secret readable")
