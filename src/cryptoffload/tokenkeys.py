"""Keys that live in a token (PKCS#11: HSM, smart card, TPM) as this package's key objects."""

from __future__ import annotations

from typing import Any

from cryptoffload import ec, rsa
from cryptoffload.core.provider import Provider
from cryptoffload.engines.pkcs11.keys import TokenAesKey, TokenEcPrivateKey, TokenRsaPrivateKey

__all__ = ["generate_key", "key"]


def _as_api_key(raw: Any, provider: Provider | None) -> Any:
    if isinstance(raw, TokenEcPrivateKey):
        return ec.EllipticCurvePrivateKey(raw, provider=provider)
    if isinstance(raw, TokenRsaPrivateKey):
        return rsa.RSAPrivateKey(raw, provider=provider)
    assert isinstance(raw, TokenAesKey)
    return raw


def key(
    engine: Any,
    *,
    label: str | None = None,
    id: bytes | None = None,
    provider: Provider | None = None,
) -> Any:
    """The token key with this label or id on ``engine`` (a ``pkcs11:`` engine): an EC or RSA
    private key of this package (``sign``, ``exchange``, ``decrypt`` run on the token through
    ``provider``, or the provider in force; its public half is an ordinary key), or a
    TokenAesKey for AESGCM and the AES ciphers. Only that engine runs it: software and other
    engines refuse it with DeviceKeyError. LookupError if there is none."""
    return _as_api_key(engine.key(label=label, id=id), provider)


def generate_key(
    engine: Any,
    kind: str,
    *,
    label: str,
    id: bytes | None = None,
    bits: int | None = None,
    curve: str = "p256",
    provider: Provider | None = None,
) -> Any:
    """A new key made on the token, not extractable (``kind`` ``"aes"``, ``"ec"`` or
    ``"rsa"``; see ``Pkcs11Engine.generate_key``), returned as :func:`key` returns it."""
    raw = engine.generate_key(kind, label=label, id=id, bits=bits, curve=curve)
    return _as_api_key(raw, provider)
