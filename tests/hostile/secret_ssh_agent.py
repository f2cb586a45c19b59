# hostile: secrets | the caller's SSH agent (its socket path, as SSH_AUTH_SOCK would give it)
# expect: exit=73 status=error
# control: host exit=42
# check: listener
import os
import socket

from _probe import params, verdict

path = os.environ.get("SSH_AUTH_SOCK") or params()["AGENT_SOCK"]
try:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(path)
        s.sendall(b"\0\0\0\x01\x0b")  # SSH2_AGENTC_REQUEST_IDENTITIES
        answer = s.recv(64)
except OSError as e:
    verdict(False, f"{path}: {e.strerror or e}")
verdict(len(answer) >= 5 and answer[4] == 12, "the agent listed its identities")
