# hostile: egress | an abstract unix socket of the host (they live in the network namespace, not the file system)
# expect: exit=73 status=error
# control: docker -network +network=host exit=42
# check: listener
import socket

from _probe import params, verdict

try:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect("\0" + params()["ABSTRACT_NAME"])
        s.sendall(b"exfiltrated\n")
        answer = s.recv(16)
except OSError as e:
    verdict(False, e.strerror or str(e))
verdict(answer == b"ack\n", "the host's abstract socket answered")
