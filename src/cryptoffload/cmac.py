"""CMAC over AES and Triple DES (SP 800-38B), shaped like `cryptography`'s `cmac` module."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives import cmac as _cmac
from cryptography.hazmat.primitives.ciphers import BlockCipherAlgorithm, algorithms

from cryptoffload._digest import DirectDigest
from cryptoffload._stream import MacContext
from cryptoffload.core import validate
from cryptoffload.core.directpath import KeyedCopies, direct_construction, own_methods
from cryptoffload.core.ops import MacOp
from cryptoffload.core.provider import Provider, checked_provider, resolve

__all__ = ["CMAC"]

#: The AES classes whose lanes go by key length (cmac-aes-128, -192, -256).
_AES_CLASSES = (algorithms.AES, algorithms.AES128, algorithms.AES256)
#: The direct path's maker: `cryptography`'s CMAC, copied from one kept per key (a new CMAC
#: context sets up the key each time; a copy of a set-up one costs about half as much).
_CMAC_COPIES = KeyedCopies(_cmac.CMAC, 64)  # keys kept: as many as the software engine keeps


class CMAC(DirectDigest):
    """A streaming CMAC: ``CMAC(algorithms.AES(key))`` or ``CMAC(TripleDES(key))``, ``update``,
    ``finalize``/``verify``.

    Where no engine claims the algorithm, the context is `cryptography`'s CMAC on the direct path
    (DigestCore, see :class:`cryptoffload.core.directpath.PureDigestCore`), counted as one op when
    the message ends; otherwise the gathering or streaming context (``_inner``) routes it
    through the provider."""

    __slots__ = ()
    #: The direct path's (see PureDigestCore): the software-only lanes by algorithm class (by
    #: key length for AES), each with `cryptography`'s CMAC (filled by :meth:`_init_slow` as it
    #: makes contexts), which takes the constructor's one argument, the algorithm.
    _direct_path = ({}, 1, 1, "finalize", InvalidSignature, MacContext._MISMATCH)

    def _init_slow(
        self, algorithm: Any, backend: object = None, *, provider: Provider | None = None
    ) -> None:
        if isinstance(algorithm, algorithms.AES):
            validate.aes_key(algorithm.key)
            alg = f"cmac-aes-{len(algorithm.key) * 8}"
        elif isinstance(algorithm, TripleDES):
            alg = "cmac-3des"
        elif isinstance(algorithm, BlockCipherAlgorithm):
            raise UnsupportedAlgorithm(
                f"CMAC takes AES or TripleDES, got {algorithm.name}", _Reasons.UNSUPPORTED_CIPHER
            )
        else:
            raise TypeError(f"Expected instance of BlockCipherAlgorithm, got {algorithm!r}")
        provider = checked_provider(provider)
        lane = resolve(provider).lane(alg)
        if lane.software_only:
            self._set_direct(_cmac.CMAC(algorithm), lane, algorithm)
            lanes = self._direct_path[0]
            cls = algorithm.__class__
            if cls in _AES_CLASSES:
                lanes.setdefault(cls, {})[len(algorithm.key)] = (lane, _CMAC_COPIES)
            elif cls is TripleDES:
                lanes[cls] = (lane, _CMAC_COPIES)
            return
        self._set_inner(_CmacStream(algorithm, alg, provider), lane, algorithm)

    def __repr__(self) -> str:
        return f"<CMAC {self._lane.alg}>"


direct_construction(CMAC)
own_methods(CMAC)


class _CmacStream(MacContext):
    """A CMAC through the provider's engines: :class:`CMAC`'s context off the direct path."""

    __slots__ = ("_algorithm",)
    _OWN_FIELDS = ("_algorithm",)

    def __init__(self, algorithm: Any, alg: str, provider: Provider | None) -> None:
        self._algorithm = algorithm
        self._start(alg, provider)

    def _software(self):
        return _cmac.CMAC(self._algorithm)

    def _software_final(self, ctx) -> bytes:
        return ctx.finalize()

    def _op(self, data: bytes) -> MacOp:
        return MacOp(self._alg, "mac", bytes(self._algorithm.key), data)

    def copy(self) -> _CmacStream:
        """An independent context with the same key and data fed so far."""
        return self._fork()
