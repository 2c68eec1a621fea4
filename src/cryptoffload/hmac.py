"""HMAC over the SHA-1/2/3 families, BLAKE2, SM3 and MD5, shaped like `cryptography`'s `hmac`."""

from __future__ import annotations

import hmac as _std_hmac
from collections.abc import Iterable
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.hashes import HashAlgorithm, HashContext

from cryptoffload._digest import DirectDigest
from cryptoffload._stream import MacContext, engine_gathering
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.core import validate
from cryptoffload.core.directpath import Gathered, direct_construction, own_methods
from cryptoffload.core.names import HASH_NAMES, XOF_NAMES, hash_name
from cryptoffload.core.ops import MacOp
from cryptoffload.core.provider import Provider, checked_provider, resolve
from cryptoffload.hashes import _BY_CLASS as _HASH_CLASSES

#: The asyncio helpers: loaded by the first ``*_async`` call (their import is a start-up cost).
asyncio_lane = LazyModule("cryptoffload.core.asyncio_lane")

__all__ = ["HMAC", "digest_async", "digest_many"]

try:  # what Python's hmac.new calls for a hash its OpenSSL has
    from _hashlib import hmac_new as _openssl_hmac
except ImportError:  # a Python built without OpenSSL: its hmac module (the stream below)
    _openssl_hmac = None


class HMAC(DirectDigest):
    """A streaming HMAC: ``update``, then ``finalize`` (the tag) or ``verify`` (a tag given).

    ``HMAC(key, algorithm, backend=None, *, provider=None)``. Where no engine claims the
    algorithm, the context is Python's OpenSSL HMAC object on the direct path (DigestCore, see
    :class:`cryptoffload.core.directpath.PureDigestCore`), made with the message's first update and
    counted as one op when the message ends; otherwise the gathering or streaming context
    (``_inner``) routes it through the provider.
    """

    __slots__ = ()
    #: The direct path's (see PureDigestCore): the software-only lanes by hash class, each with
    #: Python's OpenSSL HMAC constructor and its arguments (filled by :meth:`_init_slow` as it
    #: makes contexts); the constructor takes the key and the algorithm, the maker the key.
    _direct_path = ({}, 2, 1, "digest", InvalidSignature, MacContext._MISMATCH)

    def _init_slow(
        self,
        key: bytes,
        algorithm: HashAlgorithm,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        if key.__class__ is not bytes:
            validate.byteslike("key", key)
            key = bytes(key)
        base = _HASH_CLASSES.get(algorithm.__class__)
        if base is None or base in XOF_NAMES:
            base = _hmac_hash(algorithm)
        alg = f"hmac-{base}"
        provider = checked_provider(provider)
        lane = resolve(provider).lane(alg)
        if lane.software_only and _openssl_hmac is not None:
            name = HASH_NAMES[base]
            try:
                ctx = _openssl_hmac(key, b"", name)
            except ValueError:  # a hash Python's OpenSSL lacks: Python's hmac, below
                pass
            else:
                self._set_direct(ctx, lane, algorithm)
                if algorithm.__class__ in _HASH_CLASSES:  # its class names its hash
                    self._direct_path[0][algorithm.__class__] = (lane, _openssl_hmac, b"", name)
                return
        how = self._engine_how(lane, algorithm, alg, provider)
        if how is not None:  # the engine route: the message gathered for its session
            self._set_direct(Gathered(key, b"", how), lane, algorithm)
            if algorithm.__class__ in _HASH_CLASSES:
                self._direct_path[0][algorithm.__class__] = (lane, Gathered, b"", how)
            return
        self._set_inner(_HmacStream(key, algorithm, alg, provider, lane), lane, algorithm)

    @staticmethod
    def _engine_how(
        lane: Any, algorithm: HashAlgorithm, alg: str, provider: Provider | None
    ) -> tuple[Any, ...] | None:
        """The engine route's ``how`` for this HMAC (see ``_stream.engine_gathering``)."""
        name = HASH_NAMES[alg[5:]]
        return engine_gathering(
            lane,
            MacOp(alg, "mac", None, None),
            "mac",
            lambda key, data: _std_hmac.digest(key, data, name),
            lambda key, data: MacOp(alg, "mac", key, data),
            lambda key: _HmacStream(key, algorithm, alg, provider, lane),
        )

    def __repr__(self) -> str:
        return f"<HMAC {self._lane.alg}>"

    @property
    def algorithm(self) -> HashAlgorithm:
        """The hash algorithm object given at construction."""
        return self._algorithm


HashContext.register(HMAC)
direct_construction(HMAC)
own_methods(HMAC)


class _HmacStream(MacContext):
    """An HMAC through the provider's engines (or Python's hmac where `cryptography`'s HMAC
    cannot serve): :class:`HMAC`'s context off the direct path."""

    __slots__ = ("_algorithm", "_key")
    _OWN_FIELDS = ("_algorithm", "_key")
    _CHECKED = True  # the key was checked (and made bytes) by HMAC, the hash named by it

    def __init__(
        self,
        key: bytes,
        algorithm: HashAlgorithm,
        alg: str,
        provider: Provider | None,
        lane: Any = None,
    ) -> None:
        self._key = key
        self._algorithm = algorithm
        self._start(alg, provider, lane)

    def _software(self):
        return _std_hmac.new(self._key, digestmod=HASH_NAMES[self._alg[5:]])

    def _software_final(self, ctx) -> bytes:
        return ctx.digest()

    def _op(self, data: bytes) -> MacOp:
        return MacOp(self._alg, "mac", self._key, data)

    def copy(self) -> _HmacStream:
        """An independent context with the same key and data fed so far."""
        return self._fork()


def _hmac_hash(algorithm: HashAlgorithm) -> str:
    """Our name of a hash HMAC can use: TypeError for a non-instance, UnsupportedAlgorithm for
    a hash we do not offer or an extendable-output one (SHAKE)."""
    base = hash_name(algorithm)
    if base in XOF_NAMES:
        raise UnsupportedAlgorithm(
            f"{algorithm.name} is an extendable-output function: HMAC needs a fixed-size hash",
            _Reasons.UNSUPPORTED_HASH,
        )
    return base


async def digest_async(
    key: bytes,
    data: bytes,
    algorithm: HashAlgorithm,
    *,
    provider: Provider | None = None,
) -> bytes:
    """The HMAC tag of ``data`` under ``key`` in one call, awaited (see
    :mod:`cryptoffload.core.asyncio_lane`): the tag, errors and counts of ``HMAC(key, algorithm)``
    fed ``data`` and finalized."""
    validate.byteslike("key", key)
    alg = f"hmac-{_hmac_hash(algorithm)}"
    key = bytes(key)
    lane = resolve(checked_provider(provider)).lane(alg)
    return await asyncio_lane.offload(
        lane, lambda: MacOp(alg, "mac", key, data), _digest, key, data, algorithm, lane.provider
    )


def _digest(key: bytes, data: bytes, algorithm: HashAlgorithm, provider: Provider) -> bytes:
    """HMAC(key, algorithm) fed ``data``, finalized: the sync one-shot."""
    ctx = HMAC(key, algorithm, provider=provider)
    ctx.update(data)
    return ctx.finalize()


def digest_many(
    key: bytes,
    messages: Iterable[bytes],
    algorithm: HashAlgorithm,
    *,
    provider: Provider | None = None,
) -> list[Any]:
    """The HMAC tags of many messages under one key as one batch: in order, each tag or the
    exception that is its answer."""
    validate.byteslike("key", key)
    alg = f"hmac-{_hmac_hash(algorithm)}"
    key = bytes(key)
    messages = validate.batch("digest_many", messages, "bytes-like message")
    lane = resolve(checked_provider(provider)).lane(alg)
    if not lane.software_only:
        return lane.run_batch([MacOp(alg, "mac", key, m) for m in messages])
    out: list[Any] = []
    for message in messages:
        try:
            out.append(_std_hmac.digest(key, message, HASH_NAMES[alg[5:]]))
        except TypeError:
            try:
                validate.byteslike("data", message)
            except TypeError as exc:
                out.append(exc)
                continue
            raise
        lane.count(len(message))
    return out
