# hostile: privilege | change the clock (adjtimex(2) with an invalid tick: the kernel checks the privilege first, then refuses the value, so nothing ever changes)
# expect: exit=73 status=error
# control: docker -user -cap-drop +cap-add=SYS_TIME exit=42
import ctypes

from _probe import call, errno_name, libc, verdict

ADJ_TICK = 0x4000
timex = (ctypes.c_long * 32)()  # struct timex is 208 bytes: modes is the first int, tick the 13th long
ctypes.cast(timex, ctypes.POINTER(ctypes.c_uint))[0] = ADJ_TICK
timex[12] = 1  # far below the allowed 900000/USER_HZ
error = call(libc.adjtimex, timex)
verdict(error == 22, f"adjtimex got past the privilege check: {errno_name(error)}" if error != 1 else "EPERM")
