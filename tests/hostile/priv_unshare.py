# hostile: privilege | new namespaces (unshare(2): a user namespace, where one is root, and a mount namespace)
# expect: exit=73 status=error
# control: docker +security-opt=seccomp=unconfined exit=42
from _probe import call, errno_name, libc, verdict

CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
error = call(libc.unshare, CLONE_NEWUSER | CLONE_NEWNS)
verdict(error == 0, "entered a new user and mount namespace" if error == 0 else errno_name(error))
