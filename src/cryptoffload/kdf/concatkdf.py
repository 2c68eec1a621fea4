"""SP 800-56C one-step KDF, as `cryptography`'s ``kdf.concatkdf``: a hash or HMAC op a block."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.hashes import HashAlgorithm
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.hmac import HMAC
from cryptoffload.kdf._base import (
    HashCounterKDF,
    OneShotKDF,
    counter_blocks,
    counter_max_length,
    optional_bytes,
    size,
)

__all__ = ["ConcatKDFHMAC", "ConcatKDFHash"]


class ConcatKDFHash(HashCounterKDF):
    """Block i is Hash(i as 4 bytes | key_material | otherinfo), i from 1."""

    __slots__ = ()

    def __init__(
        self,
        algorithm: HashAlgorithm,
        length: int,
        otherinfo: bytes | None,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        self._setup(algorithm, length, "otherinfo", otherinfo, provider)

    def _message(self, key: bytes, counter: bytes) -> bytes:
        return counter + key + self._info


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
        self._provider = checked_provider(provider)
        self._used = False

    def _derive(self, state: Any) -> bytes:
        if not self._length:
            return b""
        keyed = HMAC(self._salt, self._algorithm, provider=self._provider)
        info = self._otherinfo
        return counter_blocks(
            self._length, lambda i: _mac(keyed, i.to_bytes(4, "big") + state + info)
        )


def _mac(keyed: HMAC, message: bytes) -> bytes:
    """One HMAC op over ``message``: a copy of ``keyed``, the key set once for every block."""
    mac = keyed.copy()
    mac.update(message)
    return mac.finalize()


KeyDerivationFunction.register(ConcatKDFHash)
KeyDerivationFunction.register(ConcatKDFHMAC)
