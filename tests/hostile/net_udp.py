# hostile: egress | a UDP datagram to an echo listener on the host's loopback
# expect: exit=73 status=error
# control: docker -network +network=host exit=42
# check: listener
import socket

from _probe import params, verdict

with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    s.settimeout(3)
    try:
        s.connect(("127.0.0.1", int(params()["UDP_PORT"])))
        s.send(b"exfiltrated")
        answer = s.recv(64)
    except OSError as e:
        verdict(False, e.strerror or str(e))
verdict(answer == b"exfiltrated", "the host's listener echoed the datagram")
