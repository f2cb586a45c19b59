# hostile: secrets | the engine's socket (root on the host for whoever reaches it): /var/run/docker.sock, podman's
# expect: exit=73 status=error
# control: host exit=42
import socket

from _probe import verdict

for path in ("/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock"):
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            if b"OK" in s.recv(4096):
                verdict(True, "the engine answered on " + path)
    except OSError as e:
        print(f"{path}: {e.strerror or e}")
verdict(False, "no engine socket reachable")
