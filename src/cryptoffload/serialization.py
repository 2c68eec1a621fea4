"""Key loading and saving (PEM/DER) that returns cryptoffload's RSA, EC and DH keys."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from cryptoffload import dh, ec, rsa
from cryptoffload.provider import Provider

__all__ = [
    "BestAvailableEncryption",
    "Encoding",
    "NoEncryption",
    "PrivateFormat",
    "PublicFormat",
    "load_der_private_key",
    "load_der_public_key",
    "load_pem_private_key",
    "load_pem_public_key",
    "wrap_key",
]


_WRAPPERS = (
    rsa.RSAPrivateKey,
    rsa.RSAPublicKey,
    ec.EllipticCurvePrivateKey,
    ec.EllipticCurvePublicKey,
    dh.DHPrivateKey,
    dh.DHPublicKey,
)


def wrap_key(key: Any, *, provider: Provider | None = None) -> Any:
    """This package's key for a `cryptography` RSA, EC or DH key (TypeError for other kinds)."""
    for wrapper in _WRAPPERS:
        if isinstance(key, wrapper._WRAPS):
            return wrapper(key, provider=provider)
    raise TypeError(
        f"cryptoffload handles RSA, EC (prime curves) and FFDHE keys; got {type(key).__name__}"
    )


def load_pem_private_key(
    data: bytes, password: bytes | None, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A private key from PEM (PKCS#8 or traditional), decrypted with ``password`` if given."""
    with dh.quiet_ffdh_warning():  # cryptography warns on loading any DH key
        key = _ser.load_pem_private_key(data, password)
    return wrap_key(key, provider=provider)


def load_der_private_key(
    data: bytes, password: bytes | None, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A private key from DER."""
    with dh.quiet_ffdh_warning():
        key = _ser.load_der_private_key(data, password)
    return wrap_key(key, provider=provider)


def load_pem_public_key(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A public key from PEM (SubjectPublicKeyInfo or PKCS#1)."""
    with dh.quiet_ffdh_warning():
        key = _ser.load_pem_public_key(data)
    return wrap_key(key, provider=provider)


def load_der_public_key(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A public key from DER."""
    with dh.quiet_ffdh_warning():
        key = _ser.load_der_public_key(data)
    return wrap_key(key, provider=provider)
