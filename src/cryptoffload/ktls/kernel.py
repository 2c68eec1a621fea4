"""What the kernel says about kTLS: a socket's upper-layer protocol and crypto state
(``getsockopt``), ``/proc/net/tls_stat``, and the ``/proc/crypto`` driver a cipher gets."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from cryptoffload.engines import procfs

#: <linux/tls.h> and <linux/tcp.h>.
SOL_TLS = 282
TLS_TX, TLS_RX = 1, 2
TCP_ULP = 31
#: The record-type control message (``recvmsg`` on a kTLS socket, ``sendmsg`` of non-data).
TLS_GET_RECORD_TYPE, TLS_SET_RECORD_TYPE = 2, 1
TLS_VERSIONS = {0x0303: "TLSv1.2", 0x0304: "TLSv1.3"}
#: ``crypto_info.cipher_type`` -> (our cipher name, the crypto API algorithm the kernel uses).
CIPHER_TYPES = {
    51: ("aes-128-gcm", "gcm(aes)"),
    52: ("aes-256-gcm", "gcm(aes)"),
    53: ("aes-128-ccm", "ccm(aes)"),
    54: ("chacha20-poly1305", "rfc7539(chacha20,poly1305)"),
    55: ("sm4-gcm", "gcm(sm4)"),
    56: ("sm4-ccm", "ccm(sm4)"),
    57: ("aria-128-gcm", "gcm(aria)"),
    58: ("aria-256-gcm", "gcm(aria)"),
}
#: OpenSSL's cipher-suite names -> our cipher name, for the suites kTLS can take (TLS 1.2's
#: ECDHE/DHE/RSA GCM and CHACHA20 suites, TLS 1.3's three).
_SUITE_CIPHERS = {
    "AES128-GCM": "aes-128-gcm",
    "AES_128_GCM": "aes-128-gcm",
    "AES256-GCM": "aes-256-gcm",
    "AES_256_GCM": "aes-256-gcm",
    "AES128-CCM": "aes-128-ccm",
    "AES_128_CCM": "aes-128-ccm",
    "CHACHA20": "chacha20-poly1305",
}
PROC_TLS_STAT = "/proc/net/tls_stat"


def suite_cipher(suite: str) -> str | None:
    """The record cipher of an OpenSSL cipher-suite name kTLS could take, or None (CBC suites,
    which kTLS never takes, and anything unknown)."""
    if "CCM8" in suite or "CCM_8" in suite:
        return None
    return next((c for key, c in _SUITE_CIPHERS.items() if key in suite), None)


def ulp(sock: socket.socket) -> str:
    """The socket's TCP upper-layer protocol ("tls" once kTLS is on), "" when it has none."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_ULP, 16)
    except OSError:
        return ""
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


@dataclass(frozen=True)
class CryptoState:
    """One direction's kTLS state: the TLS version and record cipher the kernel holds."""

    version: str
    cipher: str
    algorithm: str


def crypto_state(sock: socket.socket, direction: int) -> CryptoState | None:
    """The kernel's record state of one direction (``TLS_TX`` or ``TLS_RX``), or None when the
    kernel does not do that direction's records."""
    try:
        # The kernel answers the 4-byte header (version, cipher type) alone when asked for it
        # alone; a longer buffer must be the cipher's exact struct, which holds its keys.
        raw = sock.getsockopt(SOL_TLS, direction, 4)
    except OSError:  # EBUSY (not set up), ENOPROTOOPT/EOPNOTSUPP (no kTLS on the socket)...
        return None
    version, cipher_type = struct.unpack("=HH", raw[:4])
    cipher, algorithm = CIPHER_TYPES.get(cipher_type, (f"cipher-type-{cipher_type}", ""))
    return CryptoState(TLS_VERSIONS.get(version, f"0x{version:04x}"), cipher, algorithm)


def tls_stat(path: str = PROC_TLS_STAT) -> dict[str, int] | None:
    """The kernel's kTLS counters (``TlsTxSw``, ``TlsRxSw``, ``TlsTxDevice``...), or None when it
    has none (the ``tls`` module is not loaded, or the kernel has no kTLS)."""
    try:
        with open(path, encoding="ascii") as f:
            lines = f.read().split("\n")
    except OSError:
        return None
    stat = {}
    for line in lines:
        name, _, value = line.partition(" ")
        if name and value.strip().isdigit():
            stat[name] = int(value)
    return stat


def tls_stat_delta(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int]:
    """What moved between two ``tls_stat`` readings (counters that did not move left out)."""
    if not before or not after:
        return {}
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


@dataclass(frozen=True)
class Driver:
    """The crypto API driver the kernel uses for an algorithm, as ``/proc/crypto`` shows it."""

    algorithm: str
    driver: str
    module: str
    priority: int
    hardware: bool
    refcnt: int

    def as_dict(self) -> dict[str, object]:
        return {
            "algorithm": self.algorithm,
            "driver": self.driver,
            "module": self.module,
            "priority": self.priority,
            "hardware": self.hardware,
        }


def driver_for(algorithm: str, path: str = procfs.PROC_CRYPTO) -> Driver | None:
    """The driver the kernel picks for ``algorithm`` (e.g. ``gcm(aes)``): the highest-priority
    one registered, as it would pick it for a new kTLS connection; None when no instance is
    registered yet (templates are instantiated on first use)."""
    entry = procfs.chosen(procfs.read(path), algorithm)
    if entry is None:
        return None
    return Driver(
        algorithm, entry.driver, entry.module, entry.priority, entry.hardware, entry.refcnt
    )
