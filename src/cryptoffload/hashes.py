"""Message digests (SHA-1, SHA-2), shaped like `cryptography`'s `hashes` module."""

from __future__ import annotations

from cryptography.hazmat.primitives.hashes import (
    SHA1,
    SHA224,
    SHA256,
    SHA384,
    SHA512,
    SHA512_224,
    SHA512_256,
    HashAlgorithm,
)

from cryptoffload._stream import StreamContext
from cryptoffload.names import HASHLIB, hash_name
from cryptoffload.ops import Op
from cryptoffload.provider import Provider

__all__ = [
    "SHA1",
    "SHA224",
    "SHA256",
    "SHA384",
    "SHA512",
    "SHA512_224",
    "SHA512_256",
    "Hash",
    "HashAlgorithm",
]


class Hash(StreamContext):
    """A streaming digest: ``update`` any number of times, then ``finalize``; ``copy`` forks it."""

    __slots__ = ("_algorithm",)

    def __init__(
        self, algorithm: HashAlgorithm, backend: object = None, *, provider: Provider | None = None
    ) -> None:
        alg = hash_name(algorithm)
        self._algorithm = algorithm
        self._start(alg, provider)

    @property
    def algorithm(self) -> HashAlgorithm:
        """The hash algorithm object given at construction."""
        return self._algorithm

    def _software(self):
        return HASHLIB[self._alg]()

    def _software_final(self, ctx) -> bytes:
        return ctx.digest()

    def _op(self, data: bytes) -> Op:
        return Op("hash", self._alg, "digest", data=data)

    def finalize(self) -> bytes:
        """The digest; the context cannot be used afterwards."""
        return self._finish()

    def copy(self) -> Hash:
        """An independent context with the same data fed so far."""
        other = Hash.__new__(Hash)
        other._algorithm = self._algorithm
        return self._copy_into(other)
