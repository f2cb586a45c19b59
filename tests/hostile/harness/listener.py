"""Host-side listeners for the egress and secret probes, on loopback only.

Usage: listener.py DIR NONCE. Listens on 127.0.0.1 (TCP, UDP echo, DNS), ::1 (TCP), an abstract
unix socket and DIR/agent.sock (a fake SSH agent). Writes the ports and names as KEY=VALUE lines
to DIR/listener.params (atomically, when all are ready) and appends one line per connection or
datagram to DIR/listener.log, so the harness can tell whether a probe reached any of them. Runs
until killed, or for 15 minutes at most.
"""
import os
import socket
import struct
import sys
import threading
import time

directory, nonce = sys.argv[1], sys.argv[2]
log_lock = threading.Lock()


def log(kind):
    with log_lock, open(os.path.join(directory, "listener.log"), "a") as f:
        f.write(kind + "\n")


def serve_stream(server, kind, answer):
    server.listen(16)
    while True:
        conn, _ = server.accept()
        log(kind)
        with conn:
            conn.settimeout(2)
            try:
                conn.recv(64)
                conn.sendall(answer)
            except OSError:
                pass


def serve_udp(server, kind, reply):
    while True:
        data, peer = server.recvfrom(512)
        log(kind)
        server.sendto(reply(data), peer)


def dns_answer(query):
    """The query's question echoed back as a response with one A record, 127.0.0.1."""
    end = 12
    while query[end]:
        end += query[end] + 1
    question = query[12 : end + 5]  # the name, its terminating zero, type and class
    header = query[:2] + struct.pack(">HHHHH", 0x8180, 1, 1, 0, 0)
    record = struct.pack(">HHHIH", 0xC00C, 1, 1, 60, 4) + bytes([127, 0, 0, 1])
    return header + question + record


def bound(family, kind, address):
    s = socket.socket(family, kind)
    if family != socket.AF_UNIX:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(address)
    return s


tcp = bound(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
tcp6 = bound(socket.AF_INET6, socket.SOCK_STREAM, ("::1", 0))
udp = bound(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))
dns = bound(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))
abstract_name = "sandshim-hostile-" + nonce
abstract = bound(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + abstract_name)
agent_path = os.path.join(directory, "agent.sock")
agent = bound(socket.AF_UNIX, socket.SOCK_STREAM, agent_path)
os.chmod(agent_path, 0o666)  # as a real agent's socket is to its owner: only the mount may stop the probe

servers = [
    (serve_stream, tcp, "tcp", b"ack\n"),
    (serve_stream, tcp6, "tcp6", b"ack\n"),
    (serve_stream, abstract, "abstract", b"ack\n"),
    (serve_stream, agent, "agent", b"\0\0\0\x05\x0c\0\0\0\0"),  # SSH2_AGENT_IDENTITIES_ANSWER, no keys
    (serve_udp, udp, "udp", lambda data: data),
    (serve_udp, dns, "dns", dns_answer),
]
for function, server, kind, answer in servers:
    threading.Thread(target=function, args=(server, kind, answer), daemon=True).start()

settings = {
    "TCP_PORT": tcp.getsockname()[1],
    "TCP6_PORT": tcp6.getsockname()[1],
    "UDP_PORT": udp.getsockname()[1],
    "DNS_PORT": dns.getsockname()[1],
    "ABSTRACT_NAME": abstract_name,
    "AGENT_SOCK": agent_path,
}
with open(os.path.join(directory, "listener.params.tmp"), "w") as f:
    f.writelines(f"{key}={value}\n" for key, value in settings.items())
os.rename(os.path.join(directory, "listener.params.tmp"), os.path.join(directory, "listener.params"))
time.sleep(900)
