"""scrypt (RFC 7914), as `cryptography`'s ``kdf.scrypt``: one op, ``scrypt``."""

from __future__ import annotations

import sys
from typing import Any

from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

from cryptoffload.core import validate
from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.kdf._base import OneShotKDF, required_bytes, run_kdf, size

__all__ = ["Scrypt"]

#: The memory scrypt may use, as `cryptography` sets it (its tests read it to skip vectors).
_MEM_LIMIT = sys.maxsize // 2


class Scrypt(OneShotKDF):
    """``length`` bytes from a password, ``salt`` and the costs n, r, p: one op (size 0)."""

    __slots__ = ("_params", "_salt")

    def __init__(
        self,
        salt: bytes,
        length: int,
        n: int,
        r: int,
        p: int,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        self._salt = required_bytes("salt", salt)
        self._length = size(length)
        params = (size(n), size(r), size(p))
        validate.scrypt_params(*params)
        self._params = params
        self._provider = checked_provider(provider)
        self._used = False

    def _derive(self, state: Any) -> bytes:
        return run_kdf(self._provider, "scrypt", state, self._salt, self._length, self._params)


KeyDerivationFunction.register(Scrypt)
