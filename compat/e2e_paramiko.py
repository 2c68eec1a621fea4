"""End to end, paramiko unmodified: an SSH client and server in one process over a socketpair.

The server has an RSA host key made here, takes password authentication and answers an exec
request by echoing what the client sends; key exchange curve25519-sha256 and the cipher
aes128-gcm@openssh.com are the only ones either side offers. It prints what the transports
negotiated, asserts the echo came back, and (when run offloaded) the ops cryptoffload counted.

    python -m cryptoffload run [--engines passthrough] --counters ops.json compat/e2e_paramiko.py
    python compat/e2e_paramiko.py                  # the same on `cryptography` alone
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading

import paramiko
from e2e_ops import print_ops

USER, PASSWORD = "offload", "not-a-secret"
KEX = "curve25519-sha256@libssh.org"  # paramiko's name for curve25519-sha256 (RFC 8731)
CIPHER = "aes128-gcm@openssh.com"
PAYLOAD = os.urandom(64 * 1024)


class Server(paramiko.ServerInterface):
    """Password auth for one user; session channels; exec runs an echo in a thread."""

    def __init__(self) -> None:
        self.commands: list[bytes] = []

    def get_allowed_auths(self, username: str) -> str:
        return "password"

    def check_auth_password(self, username: str, password: str) -> int:
        if (username, password) == (USER, PASSWORD):
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            return paramiko.OPEN_SUCCEEDED
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        self.commands.append(command)
        threading.Thread(target=_echo, args=(channel,), daemon=True).start()
        return True


def _echo(channel: paramiko.Channel) -> None:
    """What the client sends, sent back, until it closes its side; then exit status 0."""
    while True:
        data = channel.recv(32768)
        if not data:
            break
        channel.sendall(data)
    channel.send_exit_status(0)
    channel.close()


class KexLog(logging.Handler):
    """Paramiko names the agreed key exchange only in its log ("Kex: NAME"): kept here."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.kex: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Kex: "):
            self.kex.append(message.removeprefix("Kex: "))


def _restrict(transport: paramiko.Transport) -> None:
    options = transport.get_security_options()
    options.kex = (KEX,)
    options.ciphers = (CIPHER,)


def main() -> int:
    kexlog = KexLog()
    log = logging.getLogger("paramiko.transport")
    log.setLevel(logging.DEBUG)
    log.addHandler(kexlog)
    log.propagate = False

    host_key = paramiko.RSAKey.generate(2048)
    client_sock, server_sock = socket.socketpair()
    server_t = paramiko.Transport(server_sock)
    client_t = paramiko.Transport(client_sock)
    for t in (server_t, client_t):
        _restrict(t)
    server_t.add_server_key(host_key)
    server = Server()
    negotiated = threading.Event()
    server_t.start_server(event=negotiated, server=server)  # returns at once, runs in a thread
    try:
        client_t.start_client(timeout=30)
        assert negotiated.wait(30) and server_t.is_active(), "the server side did not negotiate"
        remote_key = client_t.get_remote_server_key()
        assert remote_key == host_key, "the client saw another host key"
        client_t.auth_password(USER, PASSWORD)
        assert client_t.is_authenticated(), "password authentication failed"
        channel = client_t.open_session(timeout=30)
        channel.exec_command("echo")
        sender = threading.Thread(target=_send, args=(channel,))
        sender.start()
        received = bytearray()
        while True:
            data = channel.recv(32768)
            if not data:
                break
            received += data
        sender.join()
        status = channel.recv_exit_status()
        assert status == 0, f"exec exited {status}"
        assert bytes(received) == PAYLOAD, f"echo: sent {len(PAYLOAD)}, got {len(received)} back"
        assert server.commands == [b"echo"], server.commands
        channel.close()

        for side, t in (("client", client_t), ("server", server_t)):
            print(
                f"{side}: kex {kexlog.kex[-1] if kexlog.kex else '?'}, "
                f"host key {t.host_key_type}, cipher out {t.local_cipher} in {t.remote_cipher} "
                f"(GCM's tag: the {t.local_mac} also agreed is not used)"
            )
        assert set(kexlog.kex) == {KEX}, kexlog.kex
        for t in (client_t, server_t):
            assert (t.local_cipher, t.remote_cipher) == (CIPHER, CIPHER)
        print(
            f"host key: {remote_key.get_name()} {remote_key.get_bits()} bits, "
            f"{remote_key.fingerprint}; password auth as {USER!r} ok"
        )
        print(f"exec 'echo': {len(PAYLOAD)} bytes sent and echoed back, exit status {status}")
    finally:
        client_t.close()
        server_t.close()
    print_ops()
    return 0


def _send(channel: paramiko.Channel) -> None:
    channel.sendall(PAYLOAD)
    channel.shutdown_write()


if __name__ == "__main__":
    sys.exit(main())
