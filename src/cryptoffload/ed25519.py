"""EdDSA on Ed25519 (ed25519-sign, ed25519-verify), offered to engines, as in `cryptography`."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import ed25519 as _ed25519

from cryptoffload._rawkeys import EdPrivateKey, EdPublicKey

__all__ = ["Ed25519PrivateKey", "Ed25519PublicKey"]


class Ed25519PublicKey(EdPublicKey):
    """A Ed25519 public key."""

    __slots__ = ()
    _WRAPS = _ed25519.Ed25519PublicKey
    _NATIVE = _ed25519.Ed25519PublicKey
    _EXPECTED = "an Ed25519 public key"
    _domain = "ed25519"


class Ed25519PrivateKey(EdPrivateKey):
    """A Ed25519 private key."""

    __slots__ = ()
    _WRAPS = _ed25519.Ed25519PrivateKey
    _NATIVE = _ed25519.Ed25519PrivateKey
    _EXPECTED = "an Ed25519 private key"
    _PUBLIC = Ed25519PublicKey
    _domain = "ed25519"


_ed25519.Ed25519PublicKey.register(Ed25519PublicKey)
_ed25519.Ed25519PrivateKey.register(Ed25519PrivateKey)
