"""PBKDF2 (RFC 8018 5.2), as `cryptography`'s ``kdf.pbkdf2``: one op, ``pbkdf2-hmac-<hash>``."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.hashes import HashAlgorithm
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

from cryptoffload.core import validate
from cryptoffload.core.names import XOF_NAMES, hash_name, pbkdf2_name
from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.kdf._base import OneShotKDF, required_bytes, run_kdf, size

__all__ = ["PBKDF2HMAC"]


class PBKDF2HMAC(OneShotKDF):
    """``length`` bytes from a password, ``salt`` and ``iterations`` of HMAC-``algorithm``:
    the whole derivation is one op (its size 0: see ``ops.KdfOp``)."""

    __slots__ = ("_alg", "_iterations", "_salt")

    def __init__(
        self,
        algorithm: HashAlgorithm,
        length: int,
        salt: bytes,
        iterations: int,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        length = size(length)
        self._salt = required_bytes("salt", salt)
        iterations = size(iterations)
        validate.pbkdf2_params(iterations)
        if not isinstance(algorithm, HashAlgorithm):
            raise TypeError("Expected instance of hashes.HashAlgorithm.")
        try:
            name = hash_name(algorithm)
        except UnsupportedAlgorithm:
            name = None
        if name is None or name in XOF_NAMES:
            raise UnsupportedAlgorithm(
                f"{algorithm.name} is not supported for PBKDF2.", _Reasons.UNSUPPORTED_HASH
            )
        self._alg = pbkdf2_name(name)
        self._iterations = iterations
        self._length = length
        self._provider = checked_provider(provider)
        self._used = False

    def _derive(self, state: Any) -> bytes:
        return run_kdf(
            self._provider, self._alg, state, self._salt, self._length, (self._iterations,)
        )


KeyDerivationFunction.register(PBKDF2HMAC)
