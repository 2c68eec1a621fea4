"""Finite-field Diffie-Hellman on the RFC 7919 groups (ffdhe2048..ffdhe8192), offered to engines."""

from __future__ import annotations

import functools
from typing import Any

from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import dh as _dh

from cryptoffload import validate
from cryptoffload._keys import RoutedKey
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS, Group, group_for_prime
from cryptoffload.ops import Op
from cryptoffload.provider import Provider

__all__ = ["GROUPS", "DHPrivateKey", "DHPublicKey", "generate_private_key", "group"]

GROUPS = tuple(FFDHE_GROUPS)


def group(name: str) -> Group:
    """The named group's parameters (p, g, q); ValueError for other names."""
    try:
        return FFDHE_GROUPS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown DH group {name!r}; expected one of {', '.join(GROUPS)}"
        ) from None


@functools.cache
def _parameters(name: str) -> _dh.DHParameters:
    g = group(name)
    return _dh.DHParameterNumbers(g.p, g.g).parameters()


def _group_of(key: Any) -> str:
    numbers = key.parameters().parameter_numbers()
    found = group_for_prime(numbers.p)
    if found is None or numbers.g != found.g:
        raise ValueError("only the RFC 7919 FFDHE groups are supported (ffdhe2048..ffdhe8192)")
    return found.name


class DHPublicKey(RoutedKey):
    """A DH public value y in one of the FFDHE groups."""

    __slots__ = ("_group", "_validated")

    def __init__(self, key: _dh.DHPublicKey, *, provider: Provider | None = None) -> None:
        if not isinstance(key, _dh.DHPublicKey):
            raise TypeError(f"expected a DH public key, got {type(key).__name__}")
        self._group = _group_of(key)
        self._validated = False
        self._init_routing(key, provider)

    def _describe(self) -> str:
        return self._group

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
        numbers = _dh.DHPublicNumbers(y, _dh.DHParameterNumbers(g.p, g.g))
        return cls(numbers.public_key(), provider=provider)

    @property
    def group(self) -> str:
        """The group's name, e.g. ``ffdhe2048``."""
        return self._group

    @property
    def key_size(self) -> int:
        """Size of p in bits."""
        return self._key.key_size

    def public_numbers(self) -> _dh.DHPublicNumbers:
        """(y, parameter numbers)."""
        return self._key.public_numbers()

    def public_value(self) -> bytes:
        """y as big-endian bytes the length of p (the TLS encoding)."""
        return self._key.public_numbers().y.to_bytes((self._key.key_size + 7) // 8, "big")

    def public_bytes(self, encoding: _ser.Encoding, format: _ser.PublicFormat) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.public_bytes(encoding, format)

    def to_cryptography(self) -> _dh.DHPublicKey:
        """The underlying `cryptography` key."""
        return self._key

    def validate(self) -> None:
        """SP 800-56A public value checks (once per key object); ValueError if they fail."""
        if not self._validated:
            validate.dh_public_value(FFDHE_GROUPS[self._group], self._key.public_numbers().y)
            self._validated = True


class DHPrivateKey(RoutedKey):
    """A DH private key in one of the FFDHE groups."""

    __slots__ = ("_group",)

    def __init__(self, key: _dh.DHPrivateKey, *, provider: Provider | None = None) -> None:
        if not isinstance(key, _dh.DHPrivateKey):
            raise TypeError(f"expected a DH private key, got {type(key).__name__}")
        self._group = _group_of(key)
        self._init_routing(key, provider)

    def _describe(self) -> str:
        return self._group

    @property
    def group(self) -> str:
        """The group's name, e.g. ``ffdhe2048``."""
        return self._group

    @property
    def key_size(self) -> int:
        """Size of p in bits."""
        return self._key.key_size

    def public_key(self) -> DHPublicKey:
        """The matching public key (same provider)."""
        return DHPublicKey(self._key.public_key(), provider=self._provider)

    def private_numbers(self) -> _dh.DHPrivateNumbers:
        """x and the public numbers."""
        return self._key.private_numbers()

    def private_bytes(
        self,
        encoding: _ser.Encoding,
        format: _ser.PrivateFormat,
        encryption_algorithm: _ser.KeySerializationEncryption,
    ) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.private_bytes(encoding, format, encryption_algorithm)

    def to_cryptography(self) -> _dh.DHPrivateKey:
        """The underlying `cryptography` key."""
        return self._key

    def exchange(self, peer_public_key: Any) -> bytes:
        """The shared secret, padded to the length of p, with a validated peer value."""
        if isinstance(peer_public_key, _dh.DHPublicKey):
            peer_public_key = DHPublicKey(peer_public_key)
        if not isinstance(peer_public_key, DHPublicKey):
            raise TypeError(f"peer_public_key must be a DH public key, got {peer_public_key!r}")
        if peer_public_key._group != self._group:
            raise ValueError(
                f"peer public key is in {peer_public_key._group}, this key in {self._group}"
            )
        peer_public_key.validate()
        alg = self._group
        provider, direct, cell = self._route(alg)
        peer = peer_public_key._key
        if direct:
            out = self._key.exchange(peer)
            cell.add(0)
            return out
        return provider.run(Op("dh", alg, "exchange", key=self._key, peer=peer))


def generate_private_key(group_name: str, *, provider: Provider | None = None) -> DHPrivateKey:
    """A new private key in the named group (generated in OpenSSL)."""
    return DHPrivateKey(_parameters(group_name).generate_private_key(), provider=provider)
