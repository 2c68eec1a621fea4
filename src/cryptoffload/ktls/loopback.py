"""A TLS connection over loopback in this process, with or without kTLS: the bytes sent and what
the receiver got (their digests), the process's CPU time over the transfer, and the kernel's own
figures (``tls_stat``, the driver's users) around it. Measures for `verify --tls` and `bench`."""

from __future__ import annotations

import datetime
import hashlib
import os
import resource
import socket
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from cryptoffload.engines import procfs
from cryptoffload.ktls import kernel
from cryptoffload.ktls.connections import Connection
from cryptoffload.ktls.hook import KernelTLSSocket

#: TLS 1.2's suite here (a GCM suite kTLS takes); TLS 1.3's is OpenSSL's first choice
#: (``ssl`` cannot set TLS 1.3 suites): TLS_AES_256_GCM_SHA384.
TLS12_SUITE = "ECDHE-ECDSA-AES128-GCM-SHA256"
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


@dataclass
class Transfer:
    """What one loopback connection did."""

    version: str
    ktls: bool
    size: int
    record: int
    sendfile: bool
    intact: bool
    wall: float
    user: float
    system: float
    client: Connection | None
    server: Connection | None
    tls_stat: dict[str, int] = field(default_factory=dict)
    #: The driver of the record cipher, and its users during the transfer less before it.
    driver: dict[str, Any] | None = None
    driver_users_added: int | None = None

    @property
    def mib(self) -> float:
        return self.size / (1 << 20)

    def per_mib(self, seconds: float) -> float:
        return seconds / self.mib if self.size else 0.0


def write_certificate(directory: str) -> tuple[str, str]:
    """A self-signed P-256 certificate for ``localhost`` (its name and subjectAltName) and its
    key, as PEM files in ``directory``: (certificate path, key path)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


class Loopback:
    """Contexts for loopback connections (one certificate for all of them)."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="cryptoffload-tls-")
        self._cert, self._key = write_certificate(self._dir.name)

    def close(self) -> None:
        self._dir.cleanup()

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def contexts(self, version: str, ktls: bool) -> tuple[ssl.SSLContext, ssl.SSLContext]:
        """(server, client) contexts for ``version``, kTLS asked for on both or on neither."""
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(self._cert, self._key)
        client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client.load_verify_locations(self._cert)
        for context in (server, client):
            context.minimum_version = context.maximum_version = VERSIONS[version]
            if version == "TLSv1.2":
                context.set_ciphers(TLS12_SUITE)
            # The kernel's state of each end is read the same way with kTLS and without, and
            # neither is counted with the process's connections.
            context.sslsocket_class = _Measured if ktls else _MeasuredUserSpace
        return server, client

    def transfer(
        self,
        version: str,
        *,
        ktls: bool,
        size: int,
        record: int = 16384,
        sendfile: bool = False,
        check: bool = True,
        timeout: float = 120.0,
        driver: bool = True,
    ) -> Transfer:
        """Send ``size`` bytes from client to server in writes of ``record`` bytes (or one
        ``sendfile``); the process's CPU time and the kernel's figures around the transfer.
        With ``check``, both ends hash the stream (``intact``: the server got every byte sent;
        the hashing then counts in the CPU time); without, the server only counts the bytes.
        Without ``driver``, the record cipher's driver is not read (its /proc/crypto parse
        would count in the CPU time): ``driver`` and ``driver_users_added`` are None."""
        server_ctx, client_ctx = self.contexts(version, ktls)
        payload = os.urandom(min(size, 1 << 20))
        listener = socket.create_server(("127.0.0.1", 0))
        got: dict[str, Any] = {}

        def serve() -> None:
            try:
                raw, _ = listener.accept()
                raw.settimeout(timeout)
                with server_ctx.wrap_socket(raw, server_side=True) as tls:
                    digest, n = hashlib.sha256(), 0
                    buf = bytearray(1 << 16)
                    view = memoryview(buf)
                    while n < size:
                        k = tls.recv_into(buf)
                        if not k:
                            break
                        if check:
                            digest.update(view[:k])
                        n += k
                    got["digest"], got["n"] = digest.digest(), n
                    got["conn"] = tls._ktls
                    if driver:
                        # Both ends set up and open (the client waits for "done"): the
                        # driver's users read here, not when the client has sent, which may be
                        # before this end finished its handshake (loopback buffers hold MiBs).
                        served = _algorithm(got["conn"])
                        got["during"] = kernel.driver_for(served) if served else None
                    tls.sendall(b"done")
            except Exception as exc:
                got["error"] = exc

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        sent_digest = hashlib.sha256()
        stat_before = kernel.tls_stat()
        users_before = {e.driver: e.refcnt for e in procfs.read()}
        with client_ctx.wrap_socket(
            socket.create_connection(listener.getsockname(), timeout=timeout),
            server_hostname="localhost",
        ) as tls:
            conn = tls._ktls
            algorithm = _algorithm(conn)
            times, start = _cpu(), time.perf_counter()
            if sendfile:
                with tempfile.TemporaryFile() as f:
                    for at in range(0, size, len(payload)):
                        chunk = payload[: min(len(payload), size - at)]
                        f.write(chunk)
                        if check:
                            sent_digest.update(chunk)
                    f.flush()
                    f.seek(0)
                    times, start = _cpu(), time.perf_counter()  # the file is written
                    tls.sendfile(f)
            else:
                at = 0
                view = memoryview(payload)
                while at < size:
                    offset = at % len(payload)
                    chunk = view[offset : offset + min(record, size - at)]
                    tls.sendall(chunk)
                    if check:
                        sent_digest.update(chunk)
                    at += len(chunk)
            tls.recv(4)  # the server read everything and the driver's users (see serve)
            during = got.get("during")
            if during is None and algorithm and driver:  # the server's end is not in the kernel
                during = kernel.driver_for(algorithm)
            wall = time.perf_counter() - start
            after = _cpu()
        thread.join(timeout)
        listener.close()
        if "error" in got:
            raise got["error"]
        return Transfer(
            version=version,
            ktls=ktls,
            size=size,
            record=record,
            sendfile=sendfile,
            intact=got.get("n") == size
            and (not check or got.get("digest") == sent_digest.digest()),
            wall=wall,
            user=after[0] - times[0],
            system=after[1] - times[1],
            client=conn,
            server=got.get("conn"),
            tls_stat=kernel.tls_stat_delta(stat_before, kernel.tls_stat()),
            driver=during.as_dict() if during else None,
            driver_users_added=(
                during.refcnt - users_before.get(during.driver, 0) if during else None
            ),
        )


def _cpu() -> tuple[float, float]:
    """This process's user and system CPU seconds (both ends of the connection run here)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def _algorithm(conn: Connection | None) -> str:
    """The crypto API algorithm of a connection's record cipher ("" when not in the kernel)."""
    if conn is None or not conn.in_kernel or conn.cipher is None:
        return ""
    return next((alg for name, alg in kernel.CIPHER_TYPES.values() if name == conn.cipher), "")


class _Measured(KernelTLSSocket):
    """A measurement's connection with kTLS asked for: read, not counted."""

    _ktls_counted = False


class _MeasuredUserSpace(_Measured):
    """A measurement's connection without kTLS: OpenSSL does the records in this process."""

    _ktls_asked = False
