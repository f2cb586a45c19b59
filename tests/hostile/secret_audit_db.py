# hostile: secrets | the audit database (to read or doctor the record): its path, and the usual places
# expect: exit=73 status=error
# control: host exit=42
import glob
import os

from _probe import params, verdict

candidates = [params()["AUDIT_DB"], os.path.expanduser("~/.local/state/sandshim/audit.db")]
candidates += glob.glob("/root/.local/state/sandshim/audit.db") + glob.glob("/home/*/.local/state/sandshim/audit.db")
for path in candidates:
    try:
        with open(path, "rb") as f:
            if f.read(16) == b"SQLite format 3\0":
                verdict(True, "opened " + path)
    except OSError as e:
        print(f"{path}: {e.strerror}")
verdict(False, "no audit database reachable")
