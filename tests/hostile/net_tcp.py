# hostile: egress | TCP to a listener on the host's loopback (127.0.0.1)
# expect: exit=73 status=error
# control: docker -network +network=host exit=42
# check: listener
import socket

from _probe import params, verdict

try:
    with socket.create_connection(("127.0.0.1", int(params()["TCP_PORT"])), timeout=5) as s:
        s.sendall(b"exfiltrated\n")
        answer = s.recv(16)
except OSError as e:
    verdict(False, e.strerror or str(e))
verdict(answer == b"ack\n", "the host's listener answered")
