"""CMAC over AES and Triple DES (SP 800-38B), shaped like `cryptography`'s `cmac` module."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives import cmac as _cmac
from cryptography.hazmat.primitives.ciphers import BlockCipherAlgorithm, algorithms

from cryptoffload import validate
from cryptoffload._stream import MacContext
from cryptoffload.ops import MacOp
from cryptoffload.provider import Provider

__all__ = ["CMAC"]


class CMAC(MacContext):
    """A streaming CMAC: ``CMAC(algorithms.AES(key))`` or ``CMAC(TripleDES(key))``, ``update``,
    ``finalize``/``verify``."""

    __slots__ = ("_algorithm",)
    _OWN_FIELDS = ("_algorithm",)

    def __init__(
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
        self._algorithm = algorithm
        self._start(alg, provider)

    def __repr__(self) -> str:
        return f"<CMAC {self._alg}>"

    def _software(self):
        return _cmac.CMAC(self._algorithm)

    def _software_final(self, ctx) -> bytes:
        return ctx.finalize()

    def _op(self, data: bytes) -> MacOp:
        return MacOp(self._alg, "mac", bytes(self._algorithm.key), data)

    def copy(self) -> CMAC:
        """An independent context with the same key and data fed so far."""
        return self._fork()
