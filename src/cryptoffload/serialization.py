"""Key loading and saving (PEM/DER) that returns cryptoffload's RSA, EC and DH keys."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import dh as _dh
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa
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


def wrap_key(key: Any, *, provider: Provider | None = None) -> Any:
    """This package's key for a `cryptography` RSA, EC or DH key (TypeError for other kinds)."""
    for base, wrapper in (
        (_rsa.RSAPrivateKey, rsa.RSAPrivateKey),
        (_rsa.RSAPublicKey, rsa.RSAPublicKey),
        (_ec.EllipticCurvePrivateKey, ec.EllipticCurvePrivateKey),
        (_ec.EllipticCurvePublicKey, ec.EllipticCurvePublicKey),
        (_dh.DHPrivateKey, dh.DHPrivateKey),
        (_dh.DHPublicKey, dh.DHPublicKey),
    ):
        if isinstance(key, base):
            return wrapper(key, provider=provider)
    raise TypeError(
        f"cryptoffload handles RSA, EC (prime curves) and FFDHE keys; got {type(key).__name__}"
    )


def load_pem_private_key(
    data: bytes, password: bytes | None, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A private key from PEM (PKCS#8 or traditional), decrypted with ``password`` if given."""
    return wrap_key(_ser.load_pem_private_key(data, password), provider=provider)


def load_der_private_key(
    data: bytes, password: bytes | None, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A private key from DER."""
    return wrap_key(_ser.load_der_private_key(data, password), provider=provider)


def load_pem_public_key(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A public key from PEM (SubjectPublicKeyInfo or PKCS#1)."""
    return wrap_key(_ser.load_pem_public_key(data), provider=provider)


def load_der_public_key(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A public key from DER."""
    return wrap_key(_ser.load_der_public_key(data), provider=provider)
