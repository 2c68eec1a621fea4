"""The software engine's password KDFs, key wrap, ML-KEM and ML-DSA: `cryptography` itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives import hashes, keywrap
from cryptography.hazmat.primitives.kdf import argon2, pbkdf2, scrypt

from cryptoffload.core.names import HASH_CLASSES

#: Our hash names -> a `cryptography` hash object (PBKDF2 takes the object).
_HASHES: dict[str, Callable[[], hashes.HashAlgorithm]] = {
    **HASH_CLASSES,
    "sha3-224": hashes.SHA3_224,
    "sha3-256": hashes.SHA3_256,
    "sha3-384": hashes.SHA3_384,
    "sha3-512": hashes.SHA3_512,
    "blake2b": lambda: hashes.BLAKE2b(64),
    "blake2s": lambda: hashes.BLAKE2s(32),
    "sm3": hashes.SM3,
    "md5": hashes.MD5,
}
_ARGON2 = {"argon2d": argon2.Argon2d, "argon2i": argon2.Argon2i, "argon2id": argon2.Argon2id}


def _kdf(op: Any) -> bytes:
    alg = op.alg
    if alg == "scrypt":
        n, r, p = op.params
        return scrypt.Scrypt(op.salt, op.length, n, r, p).derive(op.key)
    if alg in _ARGON2:
        iterations, lanes, memory_cost = op.params
        kdf = _ARGON2[alg](
            salt=op.salt,
            length=op.length,
            iterations=iterations,
            lanes=lanes,
            memory_cost=memory_cost,
            ad=op.aad,
            secret=op.secret,
        )
        return kdf.derive(op.key)
    algorithm = _HASHES[alg.removeprefix("pbkdf2-hmac-")]()
    return pbkdf2.PBKDF2HMAC(algorithm, op.length, op.salt, op.params[0]).derive(op.key)


def _keywrap(op: Any) -> bytes:
    padded = op.alg.endswith("-pad")
    if op.kind == "wrap":
        wrap = keywrap.aes_key_wrap_with_padding if padded else keywrap.aes_key_wrap
        return wrap(op.key, op.data)
    unwrap = keywrap.aes_key_unwrap_with_padding if padded else keywrap.aes_key_unwrap
    return unwrap(op.key, op.data)


def _mlkem(op: Any) -> Any:
    if op.kind == "encapsulate":
        return op.key.encapsulate()
    return op.key.decapsulate(op.data)


def _mldsa(op: Any) -> Any:
    key = op.key
    if op.kind == "sign":
        if op.digest is not None:
            return key.sign_mu(op.digest)
        return key.sign(op.data, op.context)
    if op.digest is not None:
        return key.verify_mu(op.signature, op.digest)
    return key.verify(op.signature, op.data, op.context)


HANDLERS = {"kdf": _kdf, "keywrap": _keywrap, "mlkem": _mlkem, "mldsa": _mldsa}
