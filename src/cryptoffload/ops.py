"""The Op record: the one thing every engine receives, describing a single operation."""

from __future__ import annotations

from typing import Any

# Families and the kinds each may carry. Engines switch on (family, kind).
FAMILIES: dict[str, tuple[str, ...]] = {
    "cipher": ("encrypt", "decrypt"),  # AES ECB/CBC/CTR/CFB/OFB: key, iv (None for ECB), data
    "aead": (
        "encrypt",
        "decrypt",
    ),  # GCM/CCM: key, iv = nonce, data, aad, tag (decrypt), length = tag length
    "hash": ("digest",),  # data
    "mac": ("mac",),  # HMAC, CMAC: key, data; GMAC: key, iv, data = message, length = tag length
    "rsa": ("sign", "verify", "encrypt", "decrypt", "raw"),  # key = cryptography RSA key object
    "ecdsa": ("sign", "verify"),  # key = cryptography EC key object, data = digest
    "ecdh": ("exchange",),  # key = private key object, peer = public key object
    "dh": ("exchange",),  # key = private key object, peer = public key object
    "rng": ("seed",),  # length = bytes of seed material wanted
}


# Families whose payload size counts (thresholds, bytes counters); public-key ops count as 0.
_BULK = frozenset({"cipher", "aead", "hash", "mac"})


class Op:
    """One operation, as plain data. Treat it as immutable once built.

    Fields not used by a family are None. Results, by family and kind:
    cipher -> bytes; aead encrypt -> (ciphertext, tag), decrypt -> plaintext or InvalidTag;
    hash, mac -> bytes; rsa sign/encrypt/decrypt -> bytes, raw -> int, verify -> None or
    InvalidSignature; ecdsa sign -> DER signature, verify -> None or InvalidSignature;
    ecdh/dh -> shared secret bytes; rng seed -> bytes.
    """

    __slots__ = (
        "aad",
        "alg",
        "data",
        "family",
        "hash_alg",
        "iv",
        "key",
        "kind",
        "length",
        "padding",
        "peer",
        "tag",
    )

    def __init__(
        self,
        family: str,
        alg: str,
        kind: str,
        *,
        key: Any = None,
        iv: bytes | None = None,
        data: Any = None,
        aad: bytes | None = None,
        tag: bytes | None = None,
        length: int | None = None,
        padding: Any = None,
        hash_alg: Any = None,
        peer: Any = None,
    ) -> None:
        self.family = family
        self.alg = alg
        self.kind = kind
        self.key = key
        self.iv = iv
        self.data = data
        self.aad = aad
        self.tag = tag
        self.length = length
        self.padding = padding
        self.hash_alg = hash_alg
        self.peer = peer

    @property
    def size(self) -> int:
        """Bytes of payload this op carries: what thresholds compare and counters add up."""
        family = self.family
        if family in _BULK:
            return len(self.data)
        if family == "rng":
            return self.length or 0
        return 0

    def __repr__(self) -> str:
        # Never show key material or payloads: reprs end up in logs and tracebacks.
        return f"<Op {self.family}/{self.kind} {self.alg} size={self.size}>"
