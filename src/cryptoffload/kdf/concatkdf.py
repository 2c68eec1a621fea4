"""SP 800-56C one-step KDF, as `cryptography`'s ``kdf.concatkdf``: a hash or HMAC op a block."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.hashes import HashAlgorithm
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

from cryptoffload.hashes import digest
from cryptoffload.hmac import HMAC
from cryptoffload.kdf._base import OneShotKDF, counter_max_length, optional_bytes, size
from cryptoffload.provider import Provider

__all__ = ["ConcatKDFHMAC", "ConcatKDFHash"]


class ConcatKDFHash(OneShotKDF):
    """Block i is Hash(i as 4 bytes | key_material | otherinfo), i from 1."""

    __slots__ = ("_algorithm", "_otherinfo")

    def __init__(
        self,
        algorithm: HashAlgorithm,
        length: int,
        otherinfo: bytes | None,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        length = size(length)
        self._otherinfo = optional_bytes("otherinfo", otherinfo) or b""
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
            message = counter.to_bytes(4, "big") + state + self._otherinfo
            out += digest(message, self._algorithm, provider=self._provider)
        return bytes(out[: self._length])


class ConcatKDFHMAC(OneShotKDF):
    """Block i is HMAC(salt, i as 4 bytes | key_material | otherinfo), i from 1; the salt is
    the hash's block size of zeros when None."""

    __slots__ = ("_algorithm", "_otherinfo", "_salt")

    def __init__(
        self,
        algorithm: HashAlgorithm,
        length: int,
        salt: bytes | None,
        otherinfo: bytes | None,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        length = size(length)
        salt = optional_bytes("salt", salt)
        self._otherinfo = optional_bytes("otherinfo", otherinfo) or b""
        counter_max_length(algorithm, length)
        block_size = algorithm.block_size
        if block_size is None:
            raise TypeError(f"{algorithm.name} is unsupported for ConcatKDF")
        self._salt = bytes(size(block_size)) if salt is None else salt
        self._algorithm = algorithm
        self._length = length
        self._provider = provider
        self._used = False

    def _derive(self, state: Any) -> bytes:
        if not self._length:
            return b""
        keyed = HMAC(self._salt, self._algorithm, provider=self._provider)
        out = bytearray()
        counter = 0
        while len(out) < self._length:
            counter += 1
            mac = keyed.copy()
            mac.update(counter.to_bytes(4, "big") + state + self._otherinfo)
            out += mac.finalize()
        return bytes(out[: self._length])


KeyDerivationFunction.register(ConcatKDFHash)
KeyDerivationFunction.register(ConcatKDFHMAC)
