"""Message digests (SHA-1, SHA-2, SHA-3, SHAKE, BLAKE2, SM3, MD5), as `cryptography`'s `hashes`."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.hashes import (
    MD5,
    SHA1,
    SHA3_224,
    SHA3_256,
    SHA3_384,
    SHA3_512,
    SHA224,
    SHA256,
    SHA384,
    SHA512,
    SHA512_224,
    SHA512_256,
    SHAKE128,
    SHAKE256,
    SM3,
    BLAKE2b,
    BLAKE2s,
    ExtendableOutputFunction,
    HashAlgorithm,
    HashContext,
)
from cryptography.hazmat.primitives.hashes import XOFHash as _OpenSSLXOFHash

from cryptoffload._digest import DirectDigest
from cryptoffload._stream import StreamContext, engine_gathering
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.core import validate
from cryptoffload.core.directpath import Gathered, direct_construction, own_methods
from cryptoffload.core.names import HASH_CLASSES, HASHLIB, XOF_NAMES, hash_name
from cryptoffload.core.ops import HashOp
from cryptoffload.core.provider import Provider, checked_provider, resolve
from cryptoffload.dmabuffer import as_plain, claimed, lease_of

#: The asyncio helpers: loaded by the first ``*_async`` call (their import is a start-up cost).
asyncio_lane = LazyModule("cryptoffload.core.asyncio_lane")

__all__ = [
    "MD5",
    "SHA1",
    "SHA3_224",
    "SHA3_256",
    "SHA3_384",
    "SHA3_512",
    "SHA224",
    "SHA256",
    "SHA384",
    "SHA512",
    "SHA512_224",
    "SHA512_256",
    "SHAKE128",
    "SHAKE256",
    "SM3",
    "BLAKE2b",
    "BLAKE2s",
    "ExtendableOutputFunction",
    "Hash",
    "HashAlgorithm",
    "HashContext",
    "XOFHash",
    "digest",
    "digest_async",
    "digest_many",
]


#: The fixed-size hash classes by our name for them (SHAKE's are not: their size is a parameter).
_BY_CLASS: dict[type, str] = {cls: name for name, cls in HASH_CLASSES.items()}
_BY_CLASS.update(
    {
        SHA3_224: "sha3-224",
        SHA3_256: "sha3-256",
        SHA3_384: "sha3-384",
        SHA3_512: "sha3-512",
        BLAKE2b: "blake2b",
        BLAKE2s: "blake2s",
        SM3: "sm3",
        MD5: "md5",
    }
)


class Hash(DirectDigest):
    """A streaming digest: ``update`` any number of times, then ``finalize``; ``copy`` forks it.

    Where no engine claims the algorithm, the context is Python's hashlib object on the direct
    path (DigestCore, see :class:`cryptoffload.core.directpath.PureDigestCore`), made with the
    message's first update (hashlib's constructor hashes it without the per-object lock a later
    update needs) and counted as one op when the message ends; otherwise, and for SHAKE (its
    output length is a parameter), the gathering or streaming context (``_inner``) routes it
    through the provider."""

    __slots__ = ()
    #: The direct path's (see PureDigestCore): the software-only lanes by hash class, each with
    #: hashlib's constructor and the data's place (filled by :meth:`_init_slow` as it makes
    #: contexts); the constructor takes the algorithm, the maker nothing else.
    _direct_path = ({}, 1, 0, "digest", None, None)

    def _init_slow(
        self, algorithm: HashAlgorithm, backend: object = None, *, provider: Provider | None = None
    ) -> None:
        alg = _BY_CLASS.get(algorithm.__class__)
        if alg is None:
            alg = hash_name(algorithm)
        provider = checked_provider(provider)
        if alg in XOF_NAMES:
            inner: _HashStream = _XofStream(algorithm, alg, provider)
            self._set_inner(inner, inner._lane, algorithm)
            return
        lane = resolve(provider).lane(alg)
        if lane.software_only:
            make = HASHLIB[alg]
            self._set_direct(make(), lane, algorithm)
            if algorithm.__class__ in _BY_CLASS:  # its class names its hash
                self._direct_path[0][algorithm.__class__] = (lane, make, b"")
            return
        how = self._engine_how(lane, algorithm, alg, provider)
        if how is not None:  # the engine route: the message gathered for its session
            self._set_direct(Gathered(b"", how), lane, algorithm)
            if algorithm.__class__ in _BY_CLASS:
                self._direct_path[0][algorithm.__class__] = (lane, Gathered, b"", how)
            return
        self._set_inner(_HashStream(algorithm, alg, provider, lane), lane, algorithm)

    @staticmethod
    def _engine_how(
        lane: Any, algorithm: HashAlgorithm, alg: str, provider: Provider | None
    ) -> tuple[Any, ...] | None:
        """The engine route's ``how`` for this hash (see ``_stream.engine_gathering``)."""
        make = HASHLIB[alg]
        return engine_gathering(
            lane,
            HashOp(alg, "digest", None),
            "digest",
            lambda key, data: make(data).digest(),
            lambda key, data: HashOp(alg, "digest", data),
            lambda key: _HashStream(algorithm, alg, provider, lane),
        )

    @classmethod
    def hash(cls, algorithm: HashAlgorithm, data: bytes) -> bytes:
        """The digest of ``data`` in one call (`cryptography`'s one-shot): one op."""
        return digest(data, algorithm)

    @property
    def algorithm(self) -> HashAlgorithm:
        """The hash algorithm object given at construction."""
        return self._algorithm

    @property
    def verify(self) -> Any:
        """A hash has no tag to check: like `cryptography`'s Hash, no ``verify``."""
        raise AttributeError(f"{type(self).__name__!r} object has no attribute 'verify'")


HashContext.register(Hash)
direct_construction(Hash)
own_methods(Hash)


class _HashStream(StreamContext):
    """A digest through the provider's engines: :class:`Hash`'s context off the direct path."""

    __slots__ = ("_algorithm",)
    _OWN_FIELDS = ("_algorithm",)
    _CHECKED = True  # a fixed-size hash: the op is its name and the gathered bytes

    def __init__(
        self, algorithm: HashAlgorithm, alg: str, provider: Provider | None, lane: Any = None
    ) -> None:
        self._algorithm = algorithm
        self._start(alg, provider, lane)

    def _software(self):
        return HASHLIB[self._alg]()

    def _software_final(self, ctx) -> bytes:
        return ctx.digest()

    def _op(self, data: bytes) -> HashOp:
        return HashOp(self._alg, "digest", data)

    def finalize(self) -> bytes:
        """The digest; the context cannot be used afterwards."""
        return self._finish()

    def copy(self) -> _HashStream:
        """An independent context with the same data fed so far."""
        return self._fork()


class _XofStream(_HashStream):
    """SHAKE128/SHAKE256: as :class:`_HashStream`, with ``algorithm.digest_size`` bytes out."""

    __slots__ = ()
    _CHECKED = False  # the lane checks the output length

    def _software_final(self, ctx: Any) -> bytes:
        return ctx.digest(self._algorithm.digest_size)

    def _op(self, data: bytes) -> HashOp:
        return HashOp(self._alg, "digest", data, self._algorithm.digest_size)


class XOFHash:
    """An extendable-output hash (SHAKE128, SHAKE256): ``update`` any number of times, then
    ``squeeze`` its output in pieces, ``algorithm.digest_size`` bytes in all; ``copy`` forks it.

    No engine squeezes across calls, so OpenSSL does the work (as for streaming GCM): the
    context is one software op of its absorbed bytes, counted at its first squeeze, with each
    engine that claims the algorithm counted as declining it for ``streaming``; a policy that
    requires offload for it refuses the context when it is made (OffloadRequired).
    """

    __slots__ = ("_algorithm", "_counted", "_ctx", "_lane", "_total")

    def __init__(
        self, algorithm: ExtendableOutputFunction, *, provider: Provider | None = None
    ) -> None:
        if not isinstance(algorithm, ExtendableOutputFunction):
            raise TypeError(
                "Expected instance of an extendable output function (e.g. "
                f"hashes.SHAKE128(digest_size=32)), got {algorithm!r}"
            )
        alg = hash_name(algorithm)
        if alg not in XOF_NAMES:
            raise UnsupportedAlgorithm(
                f"{algorithm.name!r} is not an extendable output function cryptoffload offers "
                "(SHAKE128, SHAKE256)",
                _Reasons.UNSUPPORTED_HASH,
            )
        self._ctx = _OpenSSLXOFHash(algorithm)  # UnsupportedAlgorithm before OpenSSL 3.3
        lane = resolve(checked_provider(provider)).lane(alg)
        lane.allow_software(lane.declines_for("streaming"))
        self._algorithm = algorithm
        self._lane = lane
        self._total = 0
        self._counted = False

    def __repr__(self) -> str:
        return f"<XOFHash {self._lane.alg}>"

    @property
    def algorithm(self) -> ExtendableOutputFunction:
        """The extendable-output function object given at construction."""
        return self._algorithm

    def update(self, data: bytes) -> None:
        """Absorb ``data``; AlreadyFinalized once the context has been squeezed."""
        try:
            self._ctx.update(data)
        except TypeError:
            validate.byteslike("data", data)
            raise
        self._total += len(data)

    def squeeze(self, length: int) -> bytes:
        """The next ``length`` bytes of output; ValueError past ``algorithm.digest_size`` bytes
        in all. The first squeeze ends the input: ``update`` raises AlreadyFinalized after it."""
        out = self._ctx.squeeze(length)
        if not self._counted:
            self._counted = True
            lane = self._lane
            lane.finish_in_software(self._total, lane.declines_for("streaming"))
        return out

    def copy(self) -> XOFHash:
        """An independent context with the same input and output so far (one made before the
        first squeeze is an op of its own when it is squeezed, as a copied Hash is)."""
        other = type(self).__new__(type(self))
        other._ctx = self._ctx.copy()
        other._algorithm = self._algorithm
        other._lane = self._lane
        other._total = self._total
        other._counted = self._counted
        return other


def digest(data: bytes, algorithm: HashAlgorithm, *, provider: Provider | None = None) -> bytes:
    """The digest of ``data`` in one call: one op, the cheapest way to hash a whole message."""
    alg = _BY_CLASS.get(algorithm.__class__)
    if alg is None:
        alg = hash_name(algorithm)
        if alg in XOF_NAMES:
            return _xof_digest(data, algorithm, alg, provider)
    if data.__class__ is not bytes and lease_of(data) is not None:
        return _dma_digest(data, alg, provider)
    lane = resolve(provider).lane(alg)
    if not lane.software_only:
        # The policy may keep this size from every engine: hashlib then, as on a software-only
        # lane; count(~n) counts the engines' declines (see Lane.holds_back).
        if data.__class__ is not bytes or lane.hold_below <= (n := len(data)) <= lane.hold_above:
            return lane.run(HashOp(alg, "digest", data))
        out = HASHLIB[alg](data).digest()
        lane.count(~n)
        return out
    try:
        out = HASHLIB[alg](data).digest()
    except TypeError:
        validate.byteslike("data", data)
        raise
    lane.count(len(data))
    return out


def _dma_digest(data: Any, alg: str, provider: Provider | None) -> bytes:
    """``digest`` of a DmaBuffer: in use by this op until it returns (BufferError now if an op
    in flight uses it); the engine that lent it reads it in place."""
    data = as_plain(data)
    with claimed(data):
        lane = resolve(provider).lane(alg)
        if not lane.software_only:
            return lane.run(HashOp(alg, "digest", data))
        out = HASHLIB[alg](data).digest()
        lane.count(len(data))
        return out


def _xof_digest(data: Any, algorithm: Any, alg: str, provider: Provider | None) -> bytes:
    lane = resolve(provider).lane(alg)
    if not lane.software_only:
        return lane.run(HashOp(alg, "digest", data, algorithm.digest_size))
    try:
        out = HASHLIB[alg](data).digest(algorithm.digest_size)
    except TypeError:
        validate.byteslike("data", data)
        raise
    lane.count(len(data))
    return out


async def digest_async(
    data: bytes, algorithm: HashAlgorithm, *, provider: Provider | None = None
) -> bytes:
    """:func:`digest`, awaited (see :mod:`cryptoffload.core.asyncio_lane`): the same digest, errors
    and counts."""
    alg = _BY_CLASS.get(algorithm.__class__) or hash_name(algorithm)
    provider = checked_provider(provider)
    lane = resolve(provider).lane(alg)
    length = algorithm.digest_size if alg in XOF_NAMES else None
    return await asyncio_lane.offload(
        lane,
        lambda: HashOp(alg, "digest", data, length),
        functools.partial(digest, provider=lane.provider),
        data,
        algorithm,
    )


def digest_many(
    messages: Iterable[bytes], algorithm: HashAlgorithm, *, provider: Provider | None = None
) -> list[Any]:
    """The digests of many messages as one batch: in order, each digest or the exception that
    is its answer (TypeError for a message that is not bytes-like)."""
    alg = _BY_CLASS.get(algorithm.__class__) or hash_name(algorithm)
    messages = validate.batch("digest_many", messages, "bytes-like message")
    lane = resolve(checked_provider(provider)).lane(alg)
    if not lane.software_only:
        length = algorithm.digest_size if alg in XOF_NAMES else None
        return lane.run_batch([HashOp(alg, "digest", m, length) for m in messages])
    out: list[Any] = []
    for message in messages:
        try:
            out.append(digest(message, algorithm, provider=lane.provider))
        except Exception as exc:
            out.append(exc)
    return out
