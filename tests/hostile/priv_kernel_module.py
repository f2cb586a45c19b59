# hostile: privilege | load a kernel module (init_module(2) with a non-ELF image, so nothing could ever load)
# expect: exit=73 status=error
# control: docker -user -cap-drop +cap-add=SYS_MODULE exit=42
import ctypes

from _probe import call, errno_name, libc, verdict

SYS_init_module = 175  # x86_64
image = ctypes.create_string_buffer(64)
error = call(libc.syscall, ctypes.c_long(SYS_init_module), image, ctypes.c_ulong(64), b"")
# EPERM is the refusal; anything else (ENOEXEC, or ENOSYS from a kernel without modules)
# means the call reached the kernel's module loader.
verdict(error != 1, f"init_module reached the kernel: {errno_name(error)}" if error != 1 else "EPERM")
