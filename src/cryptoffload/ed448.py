"""EdDSA on Ed448 (ed448-sign, ed448-verify) offered to engines, as `cryptography`'s `ed448`."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import ed448 as _ed448

from cryptoffload._rawkeys import EdPrivateKey, EdPublicKey

__all__ = ["Ed448PrivateKey", "Ed448PublicKey"]


class Ed448PublicKey(EdPublicKey):
    """A Ed448 public key."""

    __slots__ = ()
    _WRAPS = _ed448.Ed448PublicKey
    _NATIVE = _ed448.Ed448PublicKey
    _EXPECTED = "an Ed448 public key"
    _domain = "ed448"


class Ed448PrivateKey(EdPrivateKey):
    """A Ed448 private key."""

    __slots__ = ()
    _WRAPS = _ed448.Ed448PrivateKey
    _NATIVE = _ed448.Ed448PrivateKey
    _EXPECTED = "an Ed448 private key"
    _PUBLIC = Ed448PublicKey
    _domain = "ed448"


_ed448.Ed448PublicKey.register(Ed448PublicKey)
_ed448.Ed448PrivateKey.register(Ed448PrivateKey)
