"""Message digests (SHA-1, SHA-2), shaped like `cryptography`'s `hashes` module."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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

from cryptoffload import validate
from cryptoffload._stream import StreamContext
from cryptoffload.names import HASH_CLASSES, HASHLIB, hash_name
from cryptoffload.ops import HashOp
from cryptoffload.provider import Provider, resolve

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
    "digest",
    "digest_many",
]


_FRESH = object()  # a software context not made yet (see Hash._software)
_BY_CLASS = {cls: name for name, cls in HASH_CLASSES.items()}


class Hash(StreamContext):
    """A streaming digest: ``update`` any number of times, then ``finalize``; ``copy`` forks it."""

    __slots__ = ("_algorithm",)
    _OWN_FIELDS = ("_algorithm",)

    def __init__(
        self, algorithm: HashAlgorithm, backend: object = None, *, provider: Provider | None = None
    ) -> None:
        alg = _BY_CLASS.get(algorithm.__class__) or hash_name(algorithm)
        self._algorithm = algorithm
        self._start(alg, provider)

    @property
    def algorithm(self) -> HashAlgorithm:
        """The hash algorithm object given at construction."""
        return self._algorithm

    def _software(self):
        return HASHLIB[self._alg]()

    def _first_software(self):
        # Made at the first update, with its data: hashlib's constructor hashes a large buffer
        # without allocating the per-object lock that a later update() needs (~1 us per op).
        return _FRESH

    def update(self, data: bytes) -> None:
        """Add ``data`` to the message."""
        if self._sw is _FRESH:
            try:
                self._sw = HASHLIB[self._alg](data)
            except TypeError:
                validate.byteslike("data", data)
                raise
            self._total = len(data)
            return
        StreamContext.update(self, data)

    def _software_final(self, ctx) -> bytes:
        return ctx.digest()

    def _op(self, data: bytes) -> HashOp:
        return HashOp(self._alg, "digest", data)

    def finalize(self) -> bytes:
        """The digest; the context cannot be used afterwards."""
        sw = self._sw
        if sw is None or self._spilled:
            return self._finish()
        # The software path of _finish, inlined: it is most of what a one-shot digest costs.
        self._sw = None
        self._done = True
        out = (HASHLIB[self._alg]() if sw is _FRESH else sw).digest()
        self._lane.count(self._total)
        return out

    def copy(self) -> Hash:
        """An independent context with the same data fed so far."""
        if self._sw is _FRESH:
            self._sw = HASHLIB[self._alg]()
        return self._fork()


def digest(data: bytes, algorithm: HashAlgorithm, *, provider: Provider | None = None) -> bytes:
    """The digest of ``data`` in one call: one op, the cheapest way to hash a whole message."""
    alg = _BY_CLASS.get(algorithm.__class__) or hash_name(algorithm)
    lane = resolve(provider).lane(alg)
    if not lane.software_only:
        return lane.run(HashOp(alg, "digest", data))
    try:
        out = HASHLIB[alg](data).digest()
    except TypeError:
        validate.byteslike("data", data)
        raise
    lane.count(len(data))
    return out


def digest_many(
    messages: Iterable[bytes], algorithm: HashAlgorithm, *, provider: Provider | None = None
) -> list[Any]:
    """The digests of many messages as one batch: in order, each digest or the exception that
    is its answer (TypeError for a message that is not bytes-like)."""
    alg = _BY_CLASS.get(algorithm.__class__) or hash_name(algorithm)
    lane = resolve(provider).lane(alg)
    messages = list(messages)
    if not lane.software_only:
        return lane.run_batch([HashOp(alg, "digest", m) for m in messages])
    out: list[Any] = []
    for message in messages:
        try:
            out.append(digest(message, algorithm, provider=lane.provider))
        except Exception as exc:
            out.append(exc)
    return out
