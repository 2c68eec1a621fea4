"""CMAC over AES (SP 800-38B), shaped like `cryptography`'s `cmac` module."""

from __future__ import annotations

import hmac as _std_hmac

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import cmac as _cmac
from cryptography.hazmat.primitives.ciphers import algorithms

from cryptoffload import validate
from cryptoffload._stream import StreamContext
from cryptoffload.ops import Op
from cryptoffload.provider import Provider

__all__ = ["CMAC"]


class CMAC(StreamContext):
    """A streaming AES-CMAC: ``CMAC(algorithms.AES(key))``, ``update``, ``finalize``/``verify``."""

    __slots__ = ("_algorithm",)

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

    def _op(self, data: bytes) -> Op:
        return Op("mac", self._alg, "mac", key=bytes(self._algorithm.key), data=data)

    def finalize(self) -> bytes:
        """The 16-byte tag; the context cannot be used afterwards."""
        return self._finish()

    def verify(self, signature: bytes) -> None:
        """Raise InvalidSignature unless ``signature`` is this message's tag (constant-time)."""
        validate.byteslike("signature", signature)
        if not _std_hmac.compare_digest(self._finish(), bytes(signature)):
            raise InvalidSignature("Signature did not match digest.")

    def copy(self) -> CMAC:
        """An independent context with the same key and data fed so far."""
        other = CMAC.__new__(CMAC)
        other._algorithm = self._algorithm
        return self._copy_into(other)
