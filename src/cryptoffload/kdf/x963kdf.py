"""ANSI X9.63 KDF, as `cryptography`'s ``kdf.x963kdf``: one digest op a block."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.hashes import HashAlgorithm
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

from cryptoffload.hashes import digest
from cryptoffload.kdf._base import OneShotKDF, counter_max_length, optional_bytes, size
from cryptoffload.provider import Provider

__all__ = ["X963KDF"]


class X963KDF(OneShotKDF):
    """X9.63: block i is Hash(key_material | i as 4 bytes | sharedinfo), i from 1."""

    __slots__ = ("_algorithm", "_sharedinfo")

    def __init__(
        self,
        algorithm: HashAlgorithm,
        length: int,
        sharedinfo: bytes | None,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        length = size(length)
        self._sharedinfo = optional_bytes("sharedinfo", sharedinfo) or b""
        counter_max_length(algorithm, length)
        self._algorithm = algorithm
        self._length = length
        self._provider = provider
        self._used = False

    def _derive(self, state: Any) -> bytes:
        out = bytearray()
        counter = 0
        while len(out) < self._length:
            counter += 1
            message = state + counter.to_bytes(4, "big") + self._sharedinfo
            out += digest(message, self._algorithm, provider=self._provider)
        return bytes(out[: self._length])


KeyDerivationFunction.register(X963KDF)
