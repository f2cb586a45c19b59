# hostile: privilege | open kernel settings for writing: /proc/sys/kernel/core_pattern (the classic escape: a core pattern piping to a host program) and /proc/sys/vm/drop_caches (nothing is written)
# expect: exit=73 status=error
# control: host exit=42
# requires: root
import os

from _probe import verdict

opened = []
for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches"):
    try:
        os.close(os.open(path, os.O_WRONLY))
        opened.append(path)
    except OSError as e:
        print(f"{path}: {e.strerror}")
verdict(bool(opened), "opened " + " ".join(opened) + " for writing")
