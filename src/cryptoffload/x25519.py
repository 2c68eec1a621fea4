"""X25519 key agreement (x25519), offered to engines, as `cryptography`'s `x25519`."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import x25519 as _x25519

from cryptoffload._rawkeys import XPrivateKey, XPublicKey

__all__ = ["X25519PrivateKey", "X25519PublicKey"]


class X25519PublicKey(XPublicKey):
    """A X25519 public key."""

    __slots__ = ()
    _WRAPS = _x25519.X25519PublicKey
    _NATIVE = _x25519.X25519PublicKey
    _EXPECTED = "an X25519 public key"
    _domain = "x25519"


class X25519PrivateKey(XPrivateKey):
    """A X25519 private key."""

    __slots__ = ()
    _WRAPS = _x25519.X25519PrivateKey
    _NATIVE = _x25519.X25519PrivateKey
    _EXPECTED = "an X25519 private key"
    _PUBLIC = X25519PublicKey
    _domain = "x25519"


_x25519.X25519PublicKey.register(X25519PublicKey)
_x25519.X25519PrivateKey.register(X25519PrivateKey)
