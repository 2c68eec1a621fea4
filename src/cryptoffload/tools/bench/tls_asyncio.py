"""asyncio's TLS over loopback in this process: a server and a client on one event loop, OpenSSL
fed from memory (``ssl.SSLObject`` over memory BIOs, as asyncio's SSL transport runs it); the
same figures as a socket transfer (:class:`~cryptoffload.ktls.loopback.Transfer`), with what the
kernel says of each end's socket (no TLS upper-layer protocol: the records stay here)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import resource
import ssl
import time
from typing import Any

from cryptoffload.ktls import kernel
from cryptoffload.ktls.connections import Connection
from cryptoffload.ktls.loopback import Loopback, Transfer


def transfer(
    loopback: Loopback,
    version: str,
    *,
    size: int,
    record: int,
    check: bool = True,
    timeout: float = 120.0,
) -> Transfer:
    """Send ``size`` bytes from an asyncio client to an asyncio server in writes of ``record``
    bytes (each awaited with ``drain``); with ``check`` both ends hash the stream."""
    server_ctx, client_ctx = loopback.contexts(version, ktls=False)
    for context in (server_ctx, client_ctx):
        # ssl's own class: a measurement's connections are not the process's to count
        context.sslobject_class = ssl.SSLObject
    coro = _transfer(server_ctx, client_ctx, version, size, record, check)
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def _transfer(
    server_ctx: ssl.SSLContext,
    client_ctx: ssl.SSLContext,
    version: str,
    size: int,
    record: int,
    check: bool,
) -> Transfer:
    payload = os.urandom(min(size, 1 << 20))
    got: dict[str, Any] = {}

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        digest, n = hashlib.sha256(), 0
        while n < size:
            chunk = await reader.read(1 << 16)
            if not chunk:
                break
            if check:
                digest.update(chunk)
            n += len(chunk)
        got["digest"], got["n"] = digest.digest(), n
        got["conn"] = _end("server", writer)
        got["conn"].received = n
        writer.write(b"done")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=client_ctx, server_hostname="localhost"
    )
    client = _end("client", writer)
    sent_digest = hashlib.sha256()
    stat_before = kernel.tls_stat()
    times, start = _cpu(), time.perf_counter()
    view, at = memoryview(payload), 0
    while at < size:
        offset = at % len(payload)
        chunk = view[offset : offset + min(record, size - at)]
        writer.write(chunk)
        await writer.drain()
        if check:
            sent_digest.update(chunk)
        at += len(chunk)
    await reader.readexactly(4)
    client.sent = at
    wall = time.perf_counter() - start
    after = _cpu()
    stat = kernel.tls_stat_delta(stat_before, kernel.tls_stat())
    writer.close()
    server.close()
    await server.wait_closed()
    return Transfer(
        version=version,
        ktls=False,
        size=size,
        record=record,
        sendfile=False,
        intact=got.get("n") == size and (not check or got.get("digest") == sent_digest.digest()),
        wall=wall,
        user=after[0] - times[0],
        system=after[1] - times[1],
        client=client,
        server=got.get("conn"),
        tls_stat=stat,
    )


def _end(side: str, writer: asyncio.StreamWriter) -> Connection:
    """One end's connection: its TLS from the SSL object, its records' place from the kernel."""
    sslobj = writer.get_extra_info("ssl_object")
    sock = writer.get_extra_info("socket")
    suite = (sslobj.cipher() or ("", "", 0))[0]
    in_kernel = sock is not None and kernel.ulp(sock) == "tls"
    tx = in_kernel and kernel.crypto_state(sock, kernel.TLS_TX) is not None
    rx = in_kernel and kernel.crypto_state(sock, kernel.TLS_RX) is not None
    return Connection(
        side=side,
        version=sslobj.version() or "",
        suite=suite,
        cipher=kernel.suite_cipher(suite),
        tx=tx,
        rx=rx,
        reason=None if tx or rx else "memory-bio",
    )


def _cpu() -> tuple[float, float]:
    """This process's user and system CPU seconds (both ends run on this thread's loop)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime
