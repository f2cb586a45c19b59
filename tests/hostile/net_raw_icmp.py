# hostile: egress | a raw socket (forged packets): an ICMP echo to the sandbox's own loopback
# expect: exit=73 status=error
# control: docker -user -cap-drop +cap-add=NET_RAW exit=42
import socket
import struct

from _probe import verdict

try:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
except OSError as e:
    verdict(False, e.strerror)
payload = struct.pack(">BBHHH", 8, 0, 0, 0x5A5A, 1) + b"sandshim"
checksum = sum(struct.unpack(">8H", payload)) if len(payload) == 16 else 0
checksum = (checksum >> 16) + (checksum & 0xFFFF)
checksum = ~(checksum + (checksum >> 16)) & 0xFFFF
s.settimeout(3)
s.sendto(payload[:2] + struct.pack(">H", checksum) + payload[4:], ("127.0.0.1", 0))
while True:
    packet = s.recv(128)
    if packet[20] == 0 and packet[24:26] == b"\x5a\x5a":
        verdict(True, "sent a raw ICMP echo and read the reply")
