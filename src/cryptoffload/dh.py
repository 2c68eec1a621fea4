"""Finite-field Diffie-Hellman on the RFC 7919 groups (ffdhe2048..ffdhe8192), offered to engines."""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Iterator
from typing import Any

from cryptography.utils import CryptographyDeprecationWarning

from cryptoffload import validate
from cryptoffload._keys import PrivateKey, PublicKey
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS, Group, group_for_prime
from cryptoffload.ops import DhOp
from cryptoffload.provider import Provider

__all__ = [
    "GROUPS",
    "DHParameterNumbers",
    "DHPrivateKey",
    "DHPrivateNumbers",
    "DHPublicKey",
    "DHPublicNumbers",
    "generate_private_key",
    "group",
    "quiet_ffdh_warning",
]

GROUPS = tuple(FFDHE_GROUPS)

#: The start of the warning `cryptography` (50 and later) gives for any use of its FFDH API.
FFDH_WARNING = r"Diffie-Hellman over finite fields \(FFDH\) is deprecated"


@contextlib.contextmanager
def quiet_ffdh_warning() -> Iterator[None]:
    """Hide `cryptography`'s FFDH deprecation warning, and no other, inside the block.

    cryptoffload uses FFDH on purpose (the RFC 7919 groups), so its own calls must not warn
    the user. Like ``warnings.catch_warnings``, which it uses, it swaps the process's filter
    list: keep it around single calls (a key load), never around user code.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=FFDH_WARNING, category=CryptographyDeprecationWarning
        )
        yield


# Each read of a name from cryptography's dh module warns: read them once, here.
with quiet_ffdh_warning():
    from cryptography.hazmat.primitives.asymmetric.dh import (
        DHParameterNumbers,
        DHPrivateNumbers,
        DHPublicNumbers,
    )
    from cryptography.hazmat.primitives.asymmetric.dh import DHParameters as _DHParameters
    from cryptography.hazmat.primitives.asymmetric.dh import DHPrivateKey as _RawPrivateKey
    from cryptography.hazmat.primitives.asymmetric.dh import DHPublicKey as _RawPublicKey


def group(name: str) -> Group:
    """The named group's parameters (p, g, q); ValueError for other names."""
    try:
        return FFDHE_GROUPS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown DH group {name!r}; expected one of {', '.join(GROUPS)}"
        ) from None


@functools.cache
def _parameters(name: str) -> _DHParameters:
    g = group(name)
    return DHParameterNumbers(g.p, g.g).parameters()


def _group_of(key: Any) -> str:
    numbers = key.parameters().parameter_numbers()
    found = group_for_prime(numbers.p)
    if found is None or numbers.g != found.g:
        raise ValueError("only the RFC 7919 FFDHE groups are supported (ffdhe2048..ffdhe8192)")
    return found.name


class DHPublicKey(PublicKey):
    """A DH public value y in one of the FFDHE groups."""

    __slots__ = ("_domain", "_validated")
    _WRAPS = _RawPublicKey
    _EXPECTED = "a DH public key"

    def __init__(self, key: _RawPublicKey, *, provider: Provider | None = None) -> None:
        super().__init__(key, provider=provider)
        self._domain = _group_of(key)
        self._validated = False

    @classmethod
    def from_public_value(
        cls, group_name: str, y: int | bytes, *, provider: Provider | None = None
    ) -> DHPublicKey:
        """The public key with value ``y`` (an int, or big-endian bytes as TLS carries it)."""
        if isinstance(y, (bytes, bytearray, memoryview)):
            y = int.from_bytes(y, "big")
        if not isinstance(y, int) or isinstance(y, bool):
            raise TypeError(f"y must be an int or bytes, got {type(y).__name__}")
        g = group(group_name)
        numbers = DHPublicNumbers(y, DHParameterNumbers(g.p, g.g))
        return cls(numbers.public_key(), provider=provider)

    @property
    def group(self) -> str:
        """The group's name, e.g. ``ffdhe2048``."""
        return self._domain

    def public_value(self) -> bytes:
        """y as big-endian bytes the length of p (the TLS encoding)."""
        return self._key.public_numbers().y.to_bytes((self._key.key_size + 7) // 8, "big")

    def validate(self) -> None:
        """SP 800-56A public value checks (once per key object); ValueError if they fail."""
        if not self._validated:
            validate.dh_public_value(FFDHE_GROUPS[self._domain], self._key.public_numbers().y)
            self._validated = True


class DHPrivateKey(PrivateKey):
    """A DH private key in one of the FFDHE groups."""

    __slots__ = ("_domain",)
    _WRAPS = _RawPrivateKey
    _EXPECTED = "a DH private key"
    _PUBLIC = DHPublicKey
    _WHERE = "in"

    def __init__(self, key: _RawPrivateKey, *, provider: Provider | None = None) -> None:
        super().__init__(key, provider=provider)
        self._domain = _group_of(key)

    @property
    def group(self) -> str:
        """The group's name, e.g. ``ffdhe2048``."""
        return self._domain

    def exchange(self, peer_public_key: Any) -> bytes:
        """The shared secret, padded to the length of p, with a validated peer value."""
        peer_public_key = self._peer(peer_public_key)
        lane = self._lane(self._domain)
        peer = peer_public_key._key
        if lane.software_only:
            peer_public_key.validate()
            out = self._key.exchange(peer)
            lane.count(0)
            return out
        return lane.run(DhOp(lane.alg, "exchange", self._key, peer))


def generate_private_key(group_name: str, *, provider: Provider | None = None) -> DHPrivateKey:
    """A new private key in the named group (generated in OpenSSL)."""
    return DHPrivateKey(_parameters(group_name).generate_private_key(), provider=provider)
