# hostile: privilege | give a file away (chown to another user)
# expect: exit=73 status=error
# control: docker -user -cap-drop exit=42
import os

from _probe import verdict

open("/tmp/owned", "w").close()
try:
    os.chown("/tmp/owned", 1234, 1234)
except OSError as e:
    verdict(False, e.strerror)
verdict(True, "chowned /tmp/owned to 1234")
