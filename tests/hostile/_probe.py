"""Shared by the Python probes: the verdict exit codes, the run's parameters, raw syscalls.

42 means the hostile action worked, 73 that it was refused (and the refusal was seen); any other
code means the probe itself broke. The harness writes `params` (KEY=VALUE lines) beside the probes.
"""
import ctypes
import os
import sys

ESCAPED, BLOCKED = 42, 73

libc = ctypes.CDLL(None, use_errno=True)


def params():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "params")
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


def verdict(escaped, why):
    print(("ESCAPED: " if escaped else "blocked: ") + why, flush=True)
    sys.exit(ESCAPED if escaped else BLOCKED)


def call(function, *args):
    """Calls a libc function; returns 0, or the errno it failed with."""
    ctypes.set_errno(0)
    result = function(*args)
    return ctypes.get_errno() if result == -1 else 0


def errno_name(number):
    import errno

    return errno.errorcode.get(number, str(number))
