"""ML-KEM (FIPS 203): encapsulation and decapsulation offered to engines (``mlkem-768-encap``,
``mlkem-768-decap``...), as `cryptography`'s ``asymmetric.mlkem``."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric import mlkem as _mlkem

from cryptoffload._pqkeys import PqPrivateKey, PqPublicKey
from cryptoffload.core.ops import MlkemOp

__all__ = ["MLKEM768PrivateKey", "MLKEM768PublicKey", "MLKEM1024PrivateKey", "MLKEM1024PublicKey"]


class _Public(PqPublicKey):
    __slots__ = ()

    def encapsulate(self) -> tuple[bytes, bytes]:
        """A fresh shared secret and the ciphertext that carries it: (shared_secret,
        ciphertext)."""
        return self._run("encap", MlkemOp, "encapsulate")


class _Private(PqPrivateKey):
    __slots__ = ()

    def decapsulate(self, ciphertext: Any) -> bytes:
        """The shared secret in ``ciphertext`` (ML-KEM's implicit rejection: a ciphertext of
        the right length that was not made for this key gives another secret, no error); the
        lane checks it (bytes-like, the parameter set's length)."""
        return self._run("decap", MlkemOp, "decapsulate", data=ciphertext)


class MLKEM768PublicKey(_Public):
    """An ML-KEM-768 public key."""

    __slots__ = ()
    _WRAPS = _mlkem.MLKEM768PublicKey
    _EXPECTED = "an ML-KEM-768 public key"
    _domain = "mlkem-768"


class MLKEM768PrivateKey(_Private):
    """An ML-KEM-768 private key."""

    __slots__ = ()
    _WRAPS = _mlkem.MLKEM768PrivateKey
    _EXPECTED = "an ML-KEM-768 private key"
    _PUBLIC = MLKEM768PublicKey
    _domain = "mlkem-768"


class MLKEM1024PublicKey(_Public):
    """An ML-KEM-1024 public key."""

    __slots__ = ()
    _WRAPS = _mlkem.MLKEM1024PublicKey
    _EXPECTED = "an ML-KEM-1024 public key"
    _domain = "mlkem-1024"


class MLKEM1024PrivateKey(_Private):
    """An ML-KEM-1024 private key."""

    __slots__ = ()
    _WRAPS = _mlkem.MLKEM1024PrivateKey
    _EXPECTED = "an ML-KEM-1024 private key"
    _PUBLIC = MLKEM1024PublicKey
    _domain = "mlkem-1024"


for _ours in (MLKEM768PublicKey, MLKEM768PrivateKey, MLKEM1024PublicKey, MLKEM1024PrivateKey):
    _ours._WRAPS.register(_ours)
    _ours._NATIVE = _ours._WRAPS  # cryptography's own ML-KEM keys count as ours
