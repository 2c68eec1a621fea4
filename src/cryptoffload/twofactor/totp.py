"""TOTP (RFC 6238), as `cryptography`'s ``twofactor.totp``: HOTP of the time step, each value
one HMAC op of the provider."""

from __future__ import annotations

from typing import Any

from cryptoffload.constant_time import bytes_eq
from cryptoffload.core.provider import Provider
from cryptoffload.twofactor import InvalidToken
from cryptoffload.twofactor.hotp import HOTP, HOTPHashTypes, provisioning_uri

__all__ = ["HOTP", "TOTP", "HOTPHashTypes", "InvalidToken"]


class TOTP:
    """Time-based one-time passwords: the HOTP of the number of ``time_step`` seconds since the
    epoch."""

    def __init__(
        self,
        key: bytes,
        length: int,
        algorithm: HOTPHashTypes,
        time_step: int,
        backend: Any = None,
        enforce_key_length: bool = True,
        *,
        provider: Provider | None = None,
    ) -> None:
        self._time_step = time_step
        self._hotp = HOTP(
            key, length, algorithm, enforce_key_length=enforce_key_length, provider=provider
        )

    def __repr__(self) -> str:
        return f"<TOTP {self._hotp._length} digits, {self._time_step}s steps>"

    def generate(self, time: int | float) -> bytes:
        """The value at ``time`` (seconds since the epoch)."""
        if not isinstance(time, (int, float)):
            raise TypeError("Time parameter must be an integer type or float type.")
        return self._hotp.generate(int(time / self._time_step))

    def verify(self, totp: bytes, time: int) -> None:
        """Raise InvalidToken unless ``totp`` is the value at ``time`` (constant time)."""
        if not bytes_eq(self.generate(time), totp):
            raise InvalidToken("Supplied TOTP value does not match.")

    def get_provisioning_uri(self, account_name: str, issuer: str | None) -> str:
        """The ``otpauth://totp/...`` URI for an authenticator app."""
        return provisioning_uri(
            self._hotp, "totp", account_name, issuer, [("period", int(self._time_step))]
        )
