# hostile: privilege | ptrace a host process (the harness's sentinel, by pid) to read or change its memory
# expect: exit=73 status=error
# control: host exit=42
import ctypes
import os

from _probe import call, errno_name, libc, params, verdict

PTRACE_ATTACH, PTRACE_DETACH = 16, 17
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
pid = int(params()["SENTINEL_PID"])
error = call(libc.ptrace, PTRACE_ATTACH, pid, None, None)
if error:
    verdict(False, f"attach to {pid}: {errno_name(error)}")
os.waitpid(pid, 0x40000000)  # __WALL: the tracee stops
libc.ptrace(PTRACE_DETACH, pid, None, None)
verdict(True, f"attached to host process {pid}")
