# hostile: workspace | overwrite a tracked file in place (victim.txt; the control restores it)
# expect: exit=73 status=error
# control: policy sandbox.workspace=rw exit=42
from _probe import verdict

try:
    with open("../victim.txt", "r+") as f:
        original = f.read()
        f.seek(0)
        f.write("x" * len(original))
        f.seek(0)
        f.write(original)
except OSError as e:
    verdict(False, e.strerror)
verdict(True, "overwrote victim.txt")
