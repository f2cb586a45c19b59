# hostile: privilege | change the hostname (sethostname(2))
# expect: exit=73 status=error
# control: docker -user -cap-drop +cap-add=SYS_ADMIN exit=42
from _probe import call, errno_name, libc, verdict

error = call(libc.sethostname, b"pwned", 5)
verdict(error == 0, "renamed the host to pwned" if error == 0 else errno_name(error))
