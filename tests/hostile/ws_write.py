# hostile: workspace | create a file at the workspace root (the control removes it again)
# expect: exit=73 status=error
# control: policy sandbox.workspace=rw exit=42
import os

from _probe import verdict

try:
    with open("../pwned.txt", "w") as f:
        f.write("pwned\n")
except OSError as e:
    verdict(False, e.strerror)
os.remove("../pwned.txt")
verdict(True, "created ../pwned.txt")
