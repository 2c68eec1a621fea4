"""ML-DSA (FIPS 204): signing and verification offered to engines (``mldsa-65-sign``,
``mldsa-65-verify``...), as `cryptography`'s ``asymmetric.mldsa``; ``MLDSAMuHasher`` computes
mu on cryptoffload's SHAKE256 (counted as ``shake256`` ops)."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import AlreadyFinalized
from cryptography.hazmat.primitives.asymmetric import mldsa as _mldsa

from cryptoffload._pqkeys import PqPrivateKey, PqPublicKey
from cryptoffload.core import validate
from cryptoffload.core.ops import MldsaOp
from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.hashes import SHAKE256, Hash, digest

__all__ = [
    "MLDSA44PrivateKey",
    "MLDSA44PublicKey",
    "MLDSA65PrivateKey",
    "MLDSA65PublicKey",
    "MLDSA87PrivateKey",
    "MLDSA87PublicKey",
    "MLDSAMuHasher",
]

#: Bytes of mu, the message representative, and of tr, the public key's hash (FIPS 204).
MU_BYTES = 64


class _Public(PqPublicKey):
    """The lane checks what ``verify`` is given (bytes-like, context and mu lengths) once."""

    __slots__ = ()

    def verify(self, signature: Any, data: Any, context: Any = None) -> None:
        """Raise InvalidSignature unless ``signature`` signs ``data`` under ``context``."""
        self._run("verify", MldsaOp, "verify", data=data, context=context, signature=signature)

    def verify_mu(self, signature: Any, mu: Any) -> None:
        """Raise InvalidSignature unless ``signature`` signs the message representative mu."""
        self._run("verify", MldsaOp, "verify", digest=mu, signature=signature)


class _Private(PqPrivateKey):
    """The lane checks what ``sign`` is given (bytes-like, context and mu lengths) once."""

    __slots__ = ()

    def sign(self, data: Any, context: Any = None) -> bytes:
        """The signature of ``data`` under ``context`` (hedged: random each time)."""
        return self._run("sign", MldsaOp, "sign", data=data, context=context)

    def sign_mu(self, mu: Any) -> bytes:
        """The signature of mu, a 64-byte message representative (it holds the context)."""
        return self._run("sign", MldsaOp, "sign", digest=mu)


def _pair(bits: int) -> tuple[type, type]:
    public_base = getattr(_mldsa, f"MLDSA{bits}PublicKey")
    private_base = getattr(_mldsa, f"MLDSA{bits}PrivateKey")
    public = type(
        f"MLDSA{bits}PublicKey",
        (_Public,),
        {
            "__slots__": (),
            "__doc__": f"An ML-DSA-{bits} public key.",
            "__module__": __name__,
            "_WRAPS": public_base,
            "_NATIVE": public_base,
            "_EXPECTED": f"an ML-DSA-{bits} public key",
            "_domain": f"mldsa-{bits}",
        },
    )
    private = type(
        f"MLDSA{bits}PrivateKey",
        (_Private,),
        {
            "__slots__": (),
            "__doc__": f"An ML-DSA-{bits} private key.",
            "__module__": __name__,
            "_WRAPS": private_base,
            "_NATIVE": private_base,
            "_EXPECTED": f"an ML-DSA-{bits} private key",
            "_PUBLIC": public,
            "_domain": f"mldsa-{bits}",
        },
    )
    public_base.register(public)
    private_base.register(private)
    return public, private


MLDSA44PublicKey, MLDSA44PrivateKey = _pair(44)
MLDSA65PublicKey, MLDSA65PrivateKey = _pair(65)
MLDSA87PublicKey, MLDSA87PrivateKey = _pair(87)
_PUBLIC_KEYS = (MLDSA44PublicKey, MLDSA65PublicKey, MLDSA87PublicKey)
_THEIR_PUBLIC_KEYS = tuple(cls._WRAPS for cls in _PUBLIC_KEYS)


class MLDSAMuHasher:
    """mu = SHAKE256(tr | 0x00 | len(context) | context | message, 64 bytes), tr =
    SHAKE256(public key, 64 bytes) (FIPS 204 algorithm 7, pure ML-DSA): ``update`` with the
    message, ``finalize`` for mu (for ``sign_mu`` / ``verify_mu``), ``copy`` to fork."""

    __slots__ = ("_hash",)

    def __init__(
        self, public_key: Any, context: Any = None, *, provider: Provider | None = None
    ) -> None:
        checked_provider(provider)
        context = b"" if context is None else context
        validate.byteslike("context", context)
        if len(context) > 255:
            raise ValueError("Context must be at most 255 bytes")
        if not isinstance(public_key, _THEIR_PUBLIC_KEYS):
            raise TypeError("public_key must be an ML-DSA public key.")
        algorithm = SHAKE256(digest_size=MU_BYTES)
        tr = digest(public_key.public_bytes_raw(), algorithm, provider=provider)
        self._hash: Hash | None = Hash(algorithm, provider=provider)
        self._hash.update(tr + b"\x00" + bytes((len(context),)) + bytes(context))

    def _state(self) -> Hash:
        if self._hash is None:
            raise AlreadyFinalized("Context was already finalized.")
        return self._hash

    def update(self, data: Any) -> None:
        """Absorb more of the message."""
        self._state().update(data)

    def copy(self) -> MLDSAMuHasher:
        """An independent hasher with the same message so far."""
        fork = object.__new__(MLDSAMuHasher)
        fork._hash = self._state().copy()
        return fork

    def finalize(self) -> bytes:
        """mu (64 bytes); the hasher is spent."""
        mu = self._state().finalize()
        self._hash = None
        return mu
