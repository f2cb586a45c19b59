# hostile: privilege | the kernel keyring (add_key(2), shared by a user across containers: not namespaced)
# expect: exit=73 status=error
# control: docker +security-opt=seccomp=unconfined exit=42
import ctypes

from _probe import call, errno_name, libc, verdict

KEY_SPEC_PROCESS_KEYRING = -2
error = call(libc.syscall, ctypes.c_long(248), b"user", b"sandshim-hostile", b"x", ctypes.c_size_t(1),
             ctypes.c_int(KEY_SPEC_PROCESS_KEYRING))  # 248: add_key on x86_64
verdict(error == 0, "added a key to the kernel keyring" if error == 0 else errno_name(error))
