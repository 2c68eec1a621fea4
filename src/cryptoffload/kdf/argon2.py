"""Argon2d, Argon2i, Argon2id (RFC 9106), as `cryptography`'s ``kdf.argon2``: one op each,
``argon2d`` / ``argon2i`` / ``argon2id``."""

from __future__ import annotations

import hmac
from typing import Any, ClassVar

from cryptography.exceptions import InvalidKey
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

from cryptoffload.core import validate
from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.kdf import _phc
from cryptoffload.kdf._base import (
    OneShotKDF,
    material,
    optional_bytes,
    required_bytes,
    run_kdf,
    size,
    u32,
)

__all__ = ["Argon2d", "Argon2i", "Argon2id"]


class _Argon2(OneShotKDF):
    """``length`` bytes from a password, ``salt``, the costs (``iterations``, ``lanes``,
    ``memory_cost`` in KiB) and optional ``ad`` and ``secret``: one op (size 0)."""

    __slots__ = ("_ad", "_params", "_salt", "_secret")
    _VARIANT: ClassVar[str] = ""

    def __init__(
        self,
        salt: bytes,
        length: int,
        iterations: int,
        lanes: int,
        memory_cost: int,
        ad: bytes | None = None,
        secret: bytes | None = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        salt = required_bytes("salt", salt)
        length = size(length)
        params = (u32(iterations), u32(lanes), u32(memory_cost))
        self._ad = optional_bytes("ad", ad)
        self._secret = optional_bytes("secret", secret)
        validate.argon2_params(salt, length, *params)
        self._salt = salt
        self._length = length
        self._params = params
        self._provider = checked_provider(provider)
        self._used = False

    def _derive(self, state: Any) -> bytes:
        return run_kdf(
            self._provider,
            self._VARIANT,
            state,
            self._salt,
            self._length,
            self._params,
            self._ad,
            self._secret,
        )

    def derive_phc_encoded(self, key_material: bytes) -> str:
        """The derived key as a PHC string (salt and costs with it; not ``ad`` or ``secret``)."""
        key = self.derive(key_material)
        iterations, lanes, memory = self._params
        return _phc.encode(self._VARIANT, memory, iterations, lanes, self._salt, key)

    @classmethod
    def verify_phc_encoded(
        cls,
        key_material: bytes,
        phc_encoded: str,
        secret: bytes | None = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        """Raise InvalidKey unless ``key_material`` derives the PHC string's hash."""
        key = material("key_material", key_material)
        if not isinstance(phc_encoded, str):
            raise TypeError(f"{type(phc_encoded).__name__!r} object cannot be converted to 'str'")
        memory, iterations, lanes, salt, expected = _phc.decode(cls._VARIANT, phc_encoded)
        kdf = cls(
            salt=salt,
            length=len(expected),
            iterations=iterations,
            lanes=lanes,
            memory_cost=memory,
            secret=secret,
            provider=provider,
        )
        if not hmac.compare_digest(kdf.derive(key), expected):
            raise InvalidKey("Keys do not match.")


class Argon2d(_Argon2):
    """Argon2d: data-dependent memory access."""

    __slots__ = ()
    _VARIANT = "argon2d"


class Argon2i(_Argon2):
    """Argon2i: data-independent memory access."""

    __slots__ = ()
    _VARIANT = "argon2i"


class Argon2id(_Argon2):
    """Argon2id: Argon2i's first half-pass, then Argon2d (RFC 9106's recommendation)."""

    __slots__ = ()
    _VARIANT = "argon2id"


for _cls in (Argon2d, Argon2i, Argon2id):
    KeyDerivationFunction.register(_cls)
