# hostile: egress | a packet socket (sniff and inject frames) bound to the loopback interface
# expect: exit=73 status=error
# control: docker -user -cap-drop +cap-add=NET_RAW exit=42
import socket

from _probe import verdict

try:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
    s.bind(("lo", 0))
except OSError as e:
    verdict(False, e.strerror)
verdict(True, "opened a packet socket on lo")
