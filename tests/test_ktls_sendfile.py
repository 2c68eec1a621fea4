"""``KernelTLSSocket.sendfile``: ``os.sendfile`` on the socket when the kernel does the connection's
send side (what OpenSSL's ``SSL_sendfile`` does), ``ssl``'s own path otherwise; the bytes counted
once either way. The host's kernel has no kTLS: the kernel's send side is stood in for where the
choice of path is checked, and the last tests run for real in the rig (rig/run), skipped here."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import socket
import tempfile
import threading

import pytest

from cryptoffload.ktls import kernel
from cryptoffload.ktls.loopback import Loopback

SIZE = 300_000


@pytest.fixture(scope="module")
def loopback():
    with Loopback() as lb:
        yield lb


def _payload() -> bytes:
    return hashlib.shake_256(b"sendfile").digest(SIZE)


@pytest.fixture
def payload_file():
    with tempfile.TemporaryFile() as f:
        f.write(_payload())
        f.flush()
        f.seek(0)
        yield f


def _send_with(
    loopback, version: str, send, *, ktls: bool = True, timeout: float | None = 30.0
) -> tuple[bytes, int]:
    """What the server received while the client ran ``send(tls)``, and the client's count of
    the bytes it sent (its connection record's ``sent``); kTLS asked for with ``ktls``."""
    server_ctx, client_ctx = loopback.contexts(version, ktls=ktls)
    listener = socket.create_server(("127.0.0.1", 0))
    got = bytearray()

    def serve() -> None:
        raw, _ = listener.accept()
        raw.settimeout(30)
        with server_ctx.wrap_socket(raw, server_side=True) as tls:
            while len(got) < SIZE:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                got.extend(chunk)
            tls.sendall(b"done")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    raw = socket.create_connection(listener.getsockname(), timeout=30)
    with client_ctx.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.settimeout(timeout)
        send(tls)
        assert tls.recv(4) == b"done"
        sent = tls._ktls.sent
    thread.join(30)
    listener.close()
    return bytes(got), sent


@pytest.fixture
def kernel_send_side(monkeypatch):
    """The kernel's answer for a connection whose send side it does (this host's cannot)."""
    real = kernel.crypto_state

    def state(sock, direction):
        if direction == kernel.TLS_TX:
            return kernel.CryptoState("TLSv1.3", "aes-256-gcm", "gcm(aes)")
        return real(sock, direction)

    monkeypatch.setattr(kernel, "crypto_state", state)


@pytest.fixture
def sendfile_calls(monkeypatch):
    """``os.sendfile``'s calls; each refused as a socket without kTLS would need it to be (the
    bytes would go out unencrypted), so that socket.sendfile falls back to ``self.send``."""
    calls: list[tuple[int, int, int, int]] = []

    def refuse(out_fd, in_fd, offset, count):
        calls.append((out_fd, in_fd, offset, count))
        raise OSError(errno.EINVAL, "stand-in: no kTLS on this host")

    monkeypatch.setattr(os, "sendfile", refuse)
    return calls


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_sendfile_without_the_kernels_send_side_goes_through_ssl(
    loopback, payload_file, monkeypatch, version
):
    def never(*args):
        raise AssertionError("os.sendfile used on a connection the kernel does not encrypt")

    monkeypatch.setattr(os, "sendfile", never)
    # kTLS not asked for: no kernel takes the send side (this host's cannot either way)
    got, sent = _send_with(loopback, version, lambda tls: tls.sendfile(payload_file), ktls=False)
    assert got == _payload()
    assert sent == SIZE


def test_sendfile_with_the_kernels_send_side_hands_the_file_to_os_sendfile(
    loopback, payload_file, kernel_send_side, sendfile_calls
):
    results = []
    got, sent = _send_with(
        loopback, "TLSv1.3", lambda tls: results.append((tls.sendfile(payload_file), tls.fileno()))
    )
    ((returned, sock_fd),), (call,) = results, sendfile_calls
    assert call[:3] == (sock_fd, payload_file.fileno(), 0)
    assert returned == SIZE and got == _payload()
    assert sent == SIZE  # counted once, though the fallback's sends count their own bytes


def test_sendfile_counts_a_part_of_a_file_once(
    loopback, payload_file, kernel_send_side, sendfile_calls
):
    body = _payload()

    def send(tls) -> None:
        assert tls.sendfile(payload_file, 1000, 5000) == 5000
        assert tls.sendfile(io.BytesIO(body[6000:])) == SIZE - 6000  # no fd: ssl's send
        tls.sendall(body[:1000])

    got, sent = _send_with(loopback, "TLSv1.2", send)
    assert got == body[1000:] + body[:1000]
    assert sent == SIZE
    assert [call[2:] for call in sendfile_calls] == [(1000, 5000)]


def test_sendfile_with_no_offset_starts_where_the_file_stands_as_ssls_path_does(
    loopback, payload_file, kernel_send_side, sendfile_calls
):
    body = _payload()

    def send(tls) -> None:
        payload_file.seek(3000)
        assert tls.sendfile(payload_file) == SIZE - 3000
        assert payload_file.tell() == SIZE
        tls.sendall(body[:3000])

    got, sent = _send_with(loopback, "TLSv1.2", send)
    assert got == body[3000:] + body[:3000]
    assert sent == SIZE
    assert sendfile_calls[0][2] == 3000


def test_sendfile_refuses_a_non_blocking_socket_as_ssl_does(
    loopback, payload_file, kernel_send_side, sendfile_calls
):
    def send(tls) -> None:
        tls.setblocking(False)
        with pytest.raises(ValueError, match="non-blocking"):
            tls.sendfile(payload_file)
        tls.setblocking(True)
        tls.sendall(_payload())

    got, sent = _send_with(loopback, "TLSv1.2", send)
    assert got == _payload() and sent == SIZE and not sendfile_calls


# -- in the rig's guest, whose kernel has kTLS ------------------------------------------------

_GUEST = pytest.mark.skipif(
    kernel.tls_stat() is None,
    reason="no kTLS in this kernel (no /proc/net/tls_stat); run it in the guest: rig/run sh -c "
    "'busybox ip link set lo up; busybox modprobe tls; exec python -m pytest ...'",
)


@_GUEST
@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_sendfile_over_ktls_arrives_intact_through_os_sendfile(loopback, monkeypatch, version):
    real, through = os.sendfile, []

    def spy(out_fd, in_fd, offset, count):
        n = real(out_fd, in_fd, offset, count)
        through.append(n)
        return n

    monkeypatch.setattr(os, "sendfile", spy)
    done = loopback.transfer(version, ktls=True, size=1 << 20, sendfile=True)
    assert done.intact
    assert done.client.tx and done.client.sent == 1 << 20
    assert sum(through) == 1 << 20
    assert done.tls_stat.get("TlsTxSw", 0) >= 1
