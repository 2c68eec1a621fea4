"""One record per TLS connection made with kTLS asked for: whether the kernel does each direction's
records, the cipher, the bytes each way, and why not; counted under the provider's
``kernel-tls`` row (one op per connection the kernel took, its bytes both ways; a decline with
its reason for one it did not)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from cryptoffload.ktls import kernel

#: The counters' row for connections whose records the kernel did.
ENGINE = "kernel-tls"
#: Why a connection's records stayed in user space (the counters' ``declined`` keys).
REASONS = {
    "no-kernel-tls": "the kernel takes no TLS upper-layer protocol (no tls module, or no kTLS)",
    "cipher": "a cipher suite or TLS version that kTLS does not take (CBC suites, CCM_8...)",
    "openssl": "OpenSSL kept the records (built without kTLS, or its own limits)",
    "memory-bio": "OpenSSL fed from memory (ssl.SSLObject: asyncio and others), not a socket",
    "not-tcp": "not a TCP socket (kTLS is TCP's upper-layer protocol)",
}
#: Connections kept in detail for the counters file; the rest are only counted.
DETAILED = 1000


@dataclass
class Connection:
    """A TLS connection's kTLS state, from the kernel after the handshake."""

    side: str
    version: str
    suite: str
    cipher: str | None
    tx: bool
    rx: bool
    reason: str | None = None
    #: Why the kernel does only one direction (TLS 1.3's receive with OpenSSL 3.0), if so.
    half: str | None = None
    driver: dict[str, Any] | None = None
    sent: int = 0
    received: int = 0
    counted: bool = field(default=False, repr=False)
    #: The provider in force where the handshake was done: the one the connection counts in.
    provider: Any = field(default=None, repr=False)

    @property
    def in_kernel(self) -> bool:
        """Whether the kernel does the records of either direction."""
        return self.tx or self.rx

    @property
    def algorithm(self) -> str:
        """The counters' algorithm name: version and record cipher (``tls1.2-aes-128-gcm``), or
        the suite where kTLS has no cipher for it."""
        version = self.version.lower().replace("v", "") if self.version else "tls"
        return f"{version}-{self.cipher or self.suite.lower()}"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "side": self.side,
            "version": self.version,
            "suite": self.suite,
            "cipher": self.cipher,
            "kernel_tx": self.tx,
            "kernel_rx": self.rx,
            "sent": self.sent,
            "received": self.received,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.half:
            out["half"] = self.half
        if self.driver:
            out["driver"] = self.driver
        return out


class Registry:
    """The connections of this process: counted into the provider in force when each closes (or
    when the process's counters are read), the first :data:`DETAILED` kept for the report."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, Connection] = {}
        self.details: list[dict[str, Any]] = []
        self.more = 0

    def opened(self, conn: Connection) -> None:
        """Note ``conn`` as open, to be counted in the provider in force now when it closes."""
        if conn.provider is None:
            from cryptoffload.core.provider import (
                current,  # here: `run --tls` hooks ssl at its import
            )

            conn.provider = current()
        with self._lock:
            self._live[id(conn)] = conn

    def closed(self, conn: Connection) -> None:
        """Count ``conn`` (once, however often it is closed)."""
        with self._lock:
            if conn.counted:
                return
            conn.counted = True
            self._live.pop(id(conn), None)
            if len(self.details) < DETAILED:
                self.details.append(conn.as_dict())
            else:
                self.more += 1
        _count(conn)

    def flush(self) -> None:
        """Count the connections still open (their bytes so far)."""
        with self._lock:
            live = list(self._live.values())
        for conn in live:
            self.closed(conn)

    def report(self) -> dict[str, Any] | None:
        """The counters file's ``kernel_tls`` section, None when no connection was made."""
        self.flush()
        with self._lock:
            if not self.details and not self.more:
                return None
            return {
                "connections": list(self.details),
                "more_connections": self.more,
                "reasons": dict(REASONS),
            }


def _count(conn: Connection) -> None:
    from cryptoffload.core.provider import current

    counters = (conn.provider or current()).counters
    if conn.in_kernel:
        counters.count(ENGINE, conn.algorithm, conn.sent + conn.received)
    else:
        counters.decline(ENGINE, conn.algorithm, conn.reason or "openssl")


REGISTRY = Registry()


def why_not(suite: str, cipher: str | None, tcp: bool) -> str:
    """Why the kernel took neither direction of a connection whose handshake is done."""
    if not tcp:
        return "not-tcp"
    if cipher is None:
        return "cipher"
    if kernel.tls_stat() is None:  # OpenSSL's setsockopt would have loaded the module
        return "no-kernel-tls"
    return "openssl"
