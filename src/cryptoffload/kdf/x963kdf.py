"""ANSI X9.63 KDF, as `cryptography`'s ``kdf.x963kdf``: one digest op a block."""

from __future__ import annotations

from cryptography.hazmat.primitives.hashes import HashAlgorithm
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

from cryptoffload.core.provider import Provider
from cryptoffload.kdf._base import HashCounterKDF

__all__ = ["X963KDF"]


class X963KDF(HashCounterKDF):
    """X9.63: block i is Hash(key_material | i as 4 bytes | sharedinfo), i from 1."""

    __slots__ = ()

    def __init__(
        self,
        algorithm: HashAlgorithm,
        length: int,
        sharedinfo: bytes | None,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        self._setup(algorithm, length, "sharedinfo", sharedinfo, provider)

    def _message(self, key: bytes, counter: bytes) -> bytes:
        return key + counter + self._info


KeyDerivationFunction.register(X963KDF)
