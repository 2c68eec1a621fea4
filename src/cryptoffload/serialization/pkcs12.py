"""`cryptography`'s ``serialization.pkcs12`` path: PKCS #12 read into cryptoffload's keys, and
written from ours or `cryptography`'s."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.serialization import pkcs12 as _pkcs12

from cryptoffload.core.provider import Provider
from cryptoffload.serialization import wrap_key
from cryptoffload.serialization._mirror import fallback, native, public_names

globals().update(public_names(_pkcs12))
PKCS12KeyAndCertificates = _pkcs12.PKCS12KeyAndCertificates
__all__ = sorted(public_names(_pkcs12))


def _ours(key: Any, provider: Provider | None) -> Any:
    return None if key is None else wrap_key(key, provider=provider)


def load_key_and_certificates(
    data: bytes, password: bytes | None, backend: Any = None, *, provider: Provider | None = None
) -> tuple[Any, Any, list[Any]]:
    """(private key as cryptoffload's, certificate, additional certificates)."""
    key, cert, more = _pkcs12.load_key_and_certificates(data, password)
    return _ours(key, provider), cert, more


def load_pkcs12(
    data: bytes, password: bytes | None, backend: Any = None, *, provider: Provider | None = None
) -> Any:
    """The bundle, its key as cryptoffload's."""
    loaded = _pkcs12.load_pkcs12(data, password)
    return PKCS12KeyAndCertificates(
        _ours(loaded.key, provider), loaded.cert, loaded.additional_certs
    )


def serialize_key_and_certificates(
    name: bytes | None, key: Any, cert: Any, cas: Any, encryption_algorithm: Any
) -> bytes:
    """PKCS #12 of ``key`` (ours or `cryptography`'s) and the certificates."""
    return _pkcs12.serialize_key_and_certificates(
        name, native(key), cert, cas, encryption_algorithm
    )


__getattr__ = fallback(_pkcs12)
