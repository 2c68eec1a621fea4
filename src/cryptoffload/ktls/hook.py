"""kTLS for every ``ssl`` connection of this process: the socket class every ``SSLContext`` makes
(``SSLContext.sslsocket_class``, the attribute ``ssl`` offers for it) asks OpenSSL for kTLS on
its context (``SSL_OP_ENABLE_KTLS``), then reads from the kernel what it took and counts the
connection; ``SSLObject`` connections (memory BIOs: asyncio) are counted as not in the kernel."""

from __future__ import annotations

import socket
import ssl
import threading
import weakref
from typing import Any

from cryptoffload.ktls import kernel
from cryptoffload.ktls.connections import REGISTRY, Connection, why_not

#: OpenSSL 3's ``SSL_OP_ENABLE_KTLS`` (``ssl.OP_ENABLE_KTLS`` from Python 3.12).
OP_ENABLE_KTLS = getattr(ssl, "OP_ENABLE_KTLS", 1 << 3)
#: OpenSSL 3.0 and 3.1 hand TLS 1.3's receive side to the kernel in no build.
_TLS13_RX = ssl.OPENSSL_VERSION_INFO >= (3, 2)
_lock = threading.Lock()
_saved: tuple[Any, Any] | None = None
_drivers: dict[str, dict[str, Any] | None] = {}
#: ``len`` under another name: ``SSLSocket.read`` names its first parameter ``len``.
_length = len


def enable(context: ssl.SSLContext) -> None:
    """Ask OpenSSL for kTLS on the connections ``context`` makes from now on."""
    try:
        if not context.options & OP_ENABLE_KTLS:
            context.options |= OP_ENABLE_KTLS
    except (ValueError, AttributeError):  # a context that refuses options: it runs as it is
        pass


def _driver(algorithm: str) -> dict[str, Any] | None:
    """The ``/proc/crypto`` driver of ``algorithm`` (read once it is instantiated)."""
    found = _drivers.get(algorithm)
    if found is None:
        driver = kernel.driver_for(algorithm)
        found = driver.as_dict() if driver else None
        if found is not None:
            _drivers[algorithm] = found
    return found


def _connection(sock: ssl.SSLSocket) -> Connection:
    """What the kernel took of ``sock``'s records, read after its handshake."""
    suite = (sock.cipher() or ("", "", 0))[0]
    version = sock.version() or ""
    cipher = kernel.suite_cipher(suite)
    tcp = sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM
    tx = rx = None
    if tcp and kernel.ulp(sock) == "tls":
        tx = kernel.crypto_state(sock, kernel.TLS_TX)
        rx = kernel.crypto_state(sock, kernel.TLS_RX)
    conn = Connection(
        side="server" if sock.server_side else "client",
        version=version,
        suite=suite,
        cipher=cipher,
        tx=tx is not None,
        rx=rx is not None,
    )
    state = tx or rx
    if state is None:
        conn.reason = why_not(suite, cipher, tcp)
    else:
        conn.cipher = state.cipher
        conn.driver = _driver(state.algorithm) if state.algorithm else None
        if tx is not None and rx is None:
            conn.half = (
                f"{ssl.OPENSSL_VERSION} does no kTLS receive for TLS 1.3"
                if version == "TLSv1.3" and not _TLS13_RX
                else "the kernel took the send side only"
            )
    return conn


class KernelTLSSocket(ssl.SSLSocket):
    """``ssl.SSLSocket`` with kTLS asked for, its connection counted."""

    _ktls: Connection | None = None
    #: Whether the connection is counted (a measurement's own connections are not).
    _ktls_counted = True
    #: Whether kTLS is asked for (the measurements' user-space side is not).
    _ktls_asked = True

    @classmethod
    def _create(cls, *args: Any, **kwargs: Any) -> Any:
        context = kwargs.get("context")
        if context is not None and cls._ktls_asked:
            enable(context)
        return super()._create(*args, **kwargs)

    def _ktls_note(self) -> None:
        if self._ktls is None and self._sslobj is not None and self.version() is not None:
            conn = _connection(self)
            self._ktls = conn
            if self._ktls_counted:
                REGISTRY.opened(conn)
                weakref.finalize(self, REGISTRY.closed, conn)

    def do_handshake(self, block: bool = False) -> None:
        super().do_handshake(block)
        self._ktls_note()

    def send(self, data: Any, flags: int = 0) -> int:
        n = super().send(data, flags)
        if self._ktls is None:
            self._ktls_note()  # a handshake OpenSSL did inside the first write
        if self._ktls is not None:
            self._ktls.sent += n
        return n

    def write(self, data: Any) -> int:
        n = super().write(data)
        if self._ktls is None:
            self._ktls_note()
        if self._ktls is not None:
            self._ktls.sent += n
        return n

    def sendfile(self, file: Any, offset: int = 0, count: int | None = None) -> int:
        """Send a file. When the kernel does this connection's send side (its ``TLS_TX`` state
        is there), ``socket.socket.sendfile`` on the socket: ``os.sendfile``, the kernel
        encrypting what is written to it, as OpenSSL's ``SSL_sendfile`` does (which ``ssl`` uses
        since CPython gh-99813, not in 3.13); a file without a descriptor goes through
        ``self.send`` there. Otherwise
        ``ssl``'s own path (the file read into user space, ``SSL_write``). A non-blocking socket
        is refused either way. As with ``SSL_sendfile``, a write that raised (a timeout) is to be
        retried with the same data first: ``ssl`` asks that of any write."""
        if self._sslobj is None or kernel.crypto_state(self, kernel.TLS_TX) is None:
            return super().sendfile(file, offset, count)
        if self._ktls is None:
            self._ktls_note()
        if not offset and hasattr(file, "tell"):
            # ssl's path reads from where the file stands when no offset is given (a plain
            # socket's sendfile from byte 0): the same bytes go out either way.
            offset = file.tell()
        before = self._ktls.sent if self._ktls is not None else 0
        sent = socket.socket.sendfile(self, file, offset, count)
        if self._ktls is not None:
            self._ktls.sent = before + sent  # what went through self.send counted itself
        return sent

    def read(self, len: int = 1024, buffer: Any = None) -> Any:
        out = super().read(len, buffer)
        if self._ktls is None:
            self._ktls_note()
        if self._ktls is not None:
            self._ktls.received += out if buffer is not None else _length(out)
        return out

    def _real_close(self) -> None:
        if self._ktls is not None and self._ktls_counted:
            REGISTRY.closed(self._ktls)
        super()._real_close()


class KernelTLSObject(ssl.SSLObject):
    """``ssl.SSLObject`` (OpenSSL over memory BIOs: asyncio's TLS): counted, never in the kernel
    (kTLS needs OpenSSL to own the socket)."""

    _ktls: Connection | None = None

    def do_handshake(self) -> None:
        super().do_handshake()
        if self._ktls is None:
            suite = (self.cipher() or ("", "", 0))[0]
            conn = Connection(
                side="server" if self.server_side else "client",
                version=self.version() or "",
                suite=suite,
                cipher=kernel.suite_cipher(suite),
                tx=False,
                rx=False,
                reason="memory-bio",
            )
            self._ktls = conn
            REGISTRY.opened(conn)
            REGISTRY.closed(conn)


def install() -> None:
    """Every ``ssl`` connection made from now on asks for kTLS and is counted."""
    global _saved
    with _lock:
        if _saved is None:
            _saved = (ssl.SSLContext.sslsocket_class, ssl.SSLContext.sslobject_class)
        ssl.SSLContext.sslsocket_class = KernelTLSSocket
        ssl.SSLContext.sslobject_class = KernelTLSObject


def uninstall() -> None:
    """Connections made from now on are ``ssl``'s own again."""
    global _saved
    with _lock:
        if _saved is not None:
            ssl.SSLContext.sslsocket_class, ssl.SSLContext.sslobject_class = _saved
            _saved = None


def installed() -> bool:
    """Whether :func:`install` is in force."""
    return ssl.SSLContext.sslsocket_class is KernelTLSSocket
