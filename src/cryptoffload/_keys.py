"""What the public-key wrappers share: the wrapped key, its provider, the members every key has."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from cryptoffload.core.names import HASH_CLASSES, HASH_NAMES, hash_name
from cryptoffload.core.provider import Lane, Provider, checked_provider, resolve


class KeyType(type):
    """The type of this package's key classes: ``isinstance(key, cryptoffload.rsa.RSAPublicKey)``
    also holds for `cryptography`'s own key of that type (a class's ``_NATIVE``), which every API
    here takes as it takes ours (wrapped by ``_adopt``: its operations go through the provider).
    """

    def __instancecheck__(cls, obj: Any) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        native = cls.__dict__.get("_NATIVE")
        return native is not None and isinstance(obj, native)

    # No __subclasscheck__: `cryptography`'s interfaces list ours among their subclasses, and
    # asking them back from here would loop.


def is_ours(key: Any) -> bool:
    """Whether ``key`` is one of this package's keys (not `cryptography`'s own)."""
    return type.__instancecheck__(RoutedKey, key)


class RoutedKey(metaclass=KeyType):
    """A `cryptography` key, offered to the provider in force (or the one given) per operation."""

    __slots__ = ("_key", "_provider")

    #: The `cryptography` key class wrapped, and how errors name it ("an RSA public key").
    _WRAPS: ClassVar[type] = object
    _EXPECTED: ClassVar[str] = ""
    #: Set on each concrete key class: `cryptography`'s interface of that key type, whose
    #: objects (its own keys) count as instances of the class and are taken wherever ours are.
    _NATIVE: ClassVar[type | None] = None

    def __init__(self, key: Any, *, provider: Provider | None = None) -> None:
        if is_ours(key):  # ours is also an instance of cryptography's interface
            key = key._key
        if not isinstance(key, self._WRAPS):
            raise TypeError(f"expected {self._EXPECTED}, got {type(key).__name__}")
        self._key = key
        self._provider = checked_provider(provider)

    @classmethod
    def _from_native(cls, key: Any) -> Any:
        """What this class wraps, made from `cryptography`'s own key (the key itself, but for
        DH, whose keys here are ``blocks.ffdh`` records)."""
        return key

    @classmethod
    def _adopt(cls, key: Any, provider: Provider | None = None) -> Any:
        """``key`` as this class: ours as it is, `cryptography`'s own wrapped (same provider)."""
        if type.__instancecheck__(cls, key):
            return key
        native = cls.__dict__.get("_NATIVE")
        if native is not None and isinstance(key, native) and not is_ours(key):
            return cls(cls._from_native(key), provider=provider)
        raise TypeError(f"expected {cls._EXPECTED}, got {type(key).__name__}")

    def _lane(self, alg: str) -> Lane:
        """The lane of ``alg`` in the provider in force."""
        return resolve(self._provider).lane(alg)

    def __repr__(self) -> str:
        # The wrapped key never shows: only its type and size.
        return f"<{type(self).__name__} {self._describe()}>"

    def _describe(self) -> str:
        # Keys of a named curve or group say which (``_domain``); others their size.
        return getattr(self, "_domain", None) or f"{self._key.key_size} bits"

    def __eq__(self, other: object) -> bool:
        # Equal to ours of the same type and value, and to `cryptography`'s own such key.
        if type(other) is type(self):
            return self._key == other._key  # type: ignore[attr-defined]
        native = type(self).__dict__.get("_NATIVE")
        if native is not None and isinstance(other, native) and not is_ours(other):
            return self._key == type(self)._from_native(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key)

    @property
    def key_size(self) -> int:
        """Size in bits (of the modulus, the curve or p)."""
        return self._key.key_size

    def to_cryptography(self) -> Any:
        """The underlying `cryptography` key (for DH, the ``blocks.ffdh`` key record)."""
        return self._key

    def __copy__(self) -> Any:
        return self  # keys are immutable, as `cryptography`'s are

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self


class PublicKey(RoutedKey):
    """Members every public key has."""

    __slots__ = ()
    #: This package's public numbers class (``_numbers.Numbers``), if the key type has one.
    _NUMBERS: ClassVar[Any] = None

    def public_numbers(self) -> Any:
        """The public numbers: this package's class around `cryptography`'s, where it has one."""
        numbers = self._key.public_numbers()
        return numbers if self._NUMBERS is None else self._NUMBERS._wrap(numbers)

    def public_bytes(self, encoding: _ser.Encoding, format: _ser.PublicFormat) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.public_bytes(encoding, format)


class PrivateKey(RoutedKey):
    """Members every private key has; ``_PUBLIC`` is the matching public key class."""

    __slots__ = ()
    _PUBLIC: ClassVar[type[PublicKey]] = PublicKey
    #: How a peer on another curve or in another group is told apart ("on" P-256, "in" ffdhe).
    _WHERE: ClassVar[str] = "on"
    #: This package's private numbers class (``_numbers.Numbers``), if the key type has one.
    _NUMBERS: ClassVar[Any] = None

    def public_key(self) -> Any:
        """The matching public key (same provider)."""
        return self._PUBLIC(self._key.public_key(), provider=self._provider)

    def _peer(self, peer: Any) -> Any:
        """``peer`` as this package's public key (ours or `cryptography`'s own), checked to share
        our curve or group."""
        public = self._PUBLIC
        try:
            peer = public._adopt(peer, self._provider)
        except TypeError:
            raise TypeError(f"peer_public_key must be {public._EXPECTED}, got {peer!r}") from None
        mine, theirs, where = self._domain, peer._domain, self._WHERE  # type: ignore[attr-defined]
        if theirs != mine:
            raise ValueError(f"peer public key is {where} {theirs}, this key {where} {mine}")
        return peer

    def private_numbers(self) -> Any:
        """The private numbers (and the public ones): this package's class, where it has one."""
        numbers = self._key.private_numbers()
        return numbers if self._NUMBERS is None else self._NUMBERS._wrap(numbers)

    def private_bytes(
        self,
        encoding: _ser.Encoding,
        format: _ser.PrivateFormat,
        encryption_algorithm: _ser.KeySerializationEncryption,
    ) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.private_bytes(encoding, format, encryption_algorithm)


_OFFERED = frozenset(HASH_CLASSES.values())


def check_hash(algorithm: Any) -> None:
    """TypeError unless ``algorithm`` (or the one ``Prehashed`` wraps) is a hash we offer."""
    if algorithm.__class__ not in _OFFERED:
        hash_name(algorithm._algorithm if isinstance(algorithm, Prehashed) else algorithm)


def digest_for(data: Any, algorithm: Any) -> tuple[Any, hashes.HashAlgorithm]:
    """(digest, hash algorithm) of ``data`` under ``algorithm``, which may be ``Prehashed``.

    With ``Prehashed`` the data is the digest: the provider checks its length against the hash.
    """
    if isinstance(algorithm, Prehashed):
        return bytes(data), algorithm._algorithm
    return hashlib.new(HASH_NAMES[hash_name(algorithm)], data).digest(), algorithm
