"""X448 key agreement (x448), offered to engines, as `cryptography`'s `x448`."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import x448 as _x448

from cryptoffload._rawkeys import XPrivateKey, XPublicKey

__all__ = ["X448PrivateKey", "X448PublicKey"]


class X448PublicKey(XPublicKey):
    """A X448 public key."""

    __slots__ = ()
    _WRAPS = _x448.X448PublicKey
    _NATIVE = _x448.X448PublicKey
    _EXPECTED = "an X448 public key"
    _domain = "x448"


class X448PrivateKey(XPrivateKey):
    """A X448 private key."""

    __slots__ = ()
    _WRAPS = _x448.X448PrivateKey
    _NATIVE = _x448.X448PrivateKey
    _EXPECTED = "an X448 private key"
    _PUBLIC = X448PublicKey
    _domain = "x448"


_x448.X448PublicKey.register(X448PublicKey)
_x448.X448PrivateKey.register(X448PrivateKey)
