"""CMAC over AES (SP 800-38B), shaped like `cryptography`'s `cmac` module."""

from __future__ import annotations

from cryptography.hazmat.primitives import cmac as _cmac
from cryptography.hazmat.primitives.ciphers import algorithms

from cryptoffload import validate
from cryptoffload._stream import MacContext
from cryptoffload.ops import MacOp
from cryptoffload.provider import Provider

__all__ = ["CMAC"]


class CMAC(MacContext):
    """A streaming AES-CMAC: ``CMAC(algorithms.AES(key))``, ``update``, ``finalize``/``verify``."""

    __slots__ = ("_algorithm",)
    _OWN_FIELDS = ("_algorithm",)

    def __init__(
        self, algorithm: algorithms.AES, backend: object = None, *, provider: Provider | None = None
    ) -> None:
        if not isinstance(algorithm, algorithms.AES):
            raise TypeError(
                f"CMAC takes algorithms.AES(key) (the only block cipher offered), got {algorithm!r}"
            )
        validate.aes_key(algorithm.key)
        self._algorithm = algorithm
        self._start(f"cmac-aes-{len(algorithm.key) * 8}", provider)

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
