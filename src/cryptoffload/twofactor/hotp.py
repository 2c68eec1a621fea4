"""HOTP (RFC 4226), as `cryptography`'s ``twofactor.hotp``: each value one HMAC op of the
provider (``hmac-sha1``, ``hmac-sha256``, ``hmac-sha512``)."""

from __future__ import annotations

import base64
from typing import Any, Union
from urllib.parse import quote, urlencode

from cryptoffload.constant_time import bytes_eq
from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.hashes import SHA1, SHA256, SHA512
from cryptoffload.hmac import HMAC
from cryptoffload.twofactor import InvalidToken

__all__ = ["HOTP", "HOTPHashTypes", "InvalidToken"]

HOTPHashTypes = Union[SHA1, SHA256, SHA512]  # noqa: UP007 - `cryptography`'s alias, a Union


def provisioning_uri(
    hotp: HOTP, kind: str, account_name: str, issuer: str | None, extra: list[tuple[str, int]]
) -> str:
    """The ``otpauth://`` URI authenticator apps read (Key Uri Format)."""
    parameters: list[tuple[str, Any]] = [
        ("digits", hotp._length),
        ("secret", base64.b32encode(hotp._key)),
        ("algorithm", hotp._algorithm.name.upper()),
    ]
    if issuer is not None:
        parameters.append(("issuer", issuer))
    parameters += extra
    label = f"{quote(issuer)}:{quote(account_name)}" if issuer else quote(account_name)
    return f"otpauth://{kind}/{label}?{urlencode(parameters)}"


class HOTP:
    """Counter-based one-time passwords of ``length`` (6 to 8) digits."""

    def __init__(
        self,
        key: bytes,
        length: int,
        algorithm: HOTPHashTypes,
        backend: Any = None,
        enforce_key_length: bool = True,
        *,
        provider: Provider | None = None,
    ) -> None:
        if len(key) < 16 and enforce_key_length is True:
            raise ValueError("Key length has to be at least 128 bits.")
        if not isinstance(length, int):
            raise TypeError("Length parameter must be an integer type.")
        if length < 6 or length > 8:
            raise ValueError("Length of HOTP has to be between 6 and 8.")
        if not isinstance(algorithm, (SHA1, SHA256, SHA512)):
            raise TypeError("Algorithm must be SHA1, SHA256 or SHA512.")
        self._key = key
        self._length = length
        self._algorithm = algorithm
        self._provider = checked_provider(provider)

    def __repr__(self) -> str:
        return f"<HOTP {self._length} digits {self._algorithm.name}>"

    def generate(self, counter: int) -> bytes:
        """The value for ``counter``, as ASCII digits."""
        if not isinstance(counter, int):
            raise TypeError("Counter parameter must be an integer type.")
        value = self._dynamic_truncate(counter) % 10**self._length
        return str(value).zfill(self._length).encode()

    def verify(self, hotp: bytes, counter: int) -> None:
        """Raise InvalidToken unless ``hotp`` is the value for ``counter`` (constant time)."""
        if not bytes_eq(self.generate(counter), hotp):
            raise InvalidToken("Supplied HOTP value does not match.")

    def _dynamic_truncate(self, counter: int) -> int:
        """RFC 4226 5.3: 31 bits of the HMAC at the offset its last nibble gives."""
        try:
            message = counter.to_bytes(length=8, byteorder="big")
        except OverflowError:
            raise ValueError(f"Counter must be between 0 and {2**64 - 1}.") from None
        mac = HMAC(self._key, self._algorithm, provider=self._provider)
        mac.update(message)
        tag = mac.finalize()
        offset = tag[-1] & 0x0F
        return int.from_bytes(tag[offset : offset + 4], byteorder="big") & 0x7FFFFFFF

    def get_provisioning_uri(self, account_name: str, counter: int, issuer: str | None) -> str:
        """The ``otpauth://hotp/...`` URI for an authenticator app."""
        return provisioning_uri(self, "hotp", account_name, issuer, [("counter", int(counter))])
