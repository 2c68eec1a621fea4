"""HPKE (RFC 9180), as `cryptography`'s ``hpke``: its ``Suite`` and hybrid keys, taking
cryptoffload's keys. `cryptography` runs the whole seal or open in one native call (KEM, key
schedule and AEAD inside it), so no part of it is an op of the provider."""

from __future__ import annotations

import abc
from typing import Any

from cryptography.hazmat.primitives import hpke as _hpke
from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM

from cryptoffload._keys import RoutedKey

__all__ = [
    "AEAD",
    "KDF",
    "KEM",
    "MLKEM768X25519PrivateKey",
    "MLKEM768X25519PublicKey",
    "MLKEM1024P384PrivateKey",
    "MLKEM1024P384PublicKey",
    "Suite",
]


def _native(key: Any) -> Any:
    """`cryptography`'s key behind one of ours (anything else as it is: the native code says
    what it does not take, with its TypeError)."""
    return key.to_cryptography() if isinstance(key, RoutedKey) else key


class Suite:
    """A KEM, KDF and AEAD: ``encrypt`` seals to a public key, ``decrypt`` opens with the
    private key (InvalidTag if it does not open), with optional ``info``."""

    __slots__ = ("_suite",)

    def __init__(self, kem: KEM, kdf: KDF, aead: AEAD) -> None:
        self._suite = _hpke.Suite(kem, kdf, aead)

    def __repr__(self) -> str:
        return "<Suite>"

    def encrypt(self, plaintext: bytes, public_key: Any, info: bytes | None = None) -> bytes:
        """The encapsulated key followed by the sealed ``plaintext``."""
        return self._suite.encrypt(plaintext, _native(public_key), info)

    def decrypt(self, ciphertext: bytes, private_key: Any, info: bytes | None = None) -> bytes:
        """The plaintext of what :meth:`encrypt` made for this key pair."""
        return self._suite.decrypt(ciphertext, _native(private_key), info)


class _Hybrid(abc.ABCMeta):
    """A hybrid key class: calling it builds `cryptography`'s key from two keys (ours or
    `cryptography`'s), which is an instance of it."""

    _NATIVE: Any

    def __call__(cls, first: Any, second: Any) -> Any:
        return cls._NATIVE(_native(first), _native(second))


class MLKEM768X25519PublicKey(metaclass=_Hybrid):
    """X-Wing's public key: an ML-KEM-768 and an X25519 public key."""

    _NATIVE = _hpke.MLKEM768X25519PublicKey


class MLKEM768X25519PrivateKey(metaclass=_Hybrid):
    """X-Wing's private key: an ML-KEM-768 and an X25519 private key."""

    _NATIVE = _hpke.MLKEM768X25519PrivateKey


class MLKEM1024P384PublicKey(metaclass=_Hybrid):
    """MLKEM1024-P384's public key: an ML-KEM-1024 and a P-384 public key."""

    _NATIVE = _hpke.MLKEM1024P384PublicKey


class MLKEM1024P384PrivateKey(metaclass=_Hybrid):
    """MLKEM1024-P384's private key: an ML-KEM-1024 and a P-384 private key."""

    _NATIVE = _hpke.MLKEM1024P384PrivateKey


for _cls in (
    MLKEM768X25519PublicKey,
    MLKEM768X25519PrivateKey,
    MLKEM1024P384PublicKey,
    MLKEM1024P384PrivateKey,
):
    _cls.register(_cls._NATIVE)
