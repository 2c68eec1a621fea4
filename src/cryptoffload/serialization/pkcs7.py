"""`cryptography`'s ``serialization.pkcs7`` path: its names, decryption taking cryptoffload's keys
as well as `cryptography`'s."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.serialization import pkcs7 as _pkcs7

from cryptoffload.serialization._mirror import native, public_names

globals().update(public_names(_pkcs7))
__all__ = sorted(public_names(_pkcs7))


def pkcs7_decrypt_der(data: bytes, certificate: Any, private_key: Any, options: Any) -> bytes:
    """The content of a DER enveloped message, opened with ``private_key`` (ours or theirs)."""
    return _pkcs7.pkcs7_decrypt_der(data, certificate, native(private_key), options)


def pkcs7_decrypt_pem(data: bytes, certificate: Any, private_key: Any, options: Any) -> bytes:
    """The content of a PEM enveloped message, opened with ``private_key`` (ours or theirs)."""
    return _pkcs7.pkcs7_decrypt_pem(data, certificate, native(private_key), options)


def pkcs7_decrypt_smime(data: bytes, certificate: Any, private_key: Any, options: Any) -> bytes:
    """The content of an S/MIME enveloped message, opened with ``private_key``."""
    return _pkcs7.pkcs7_decrypt_smime(data, certificate, native(private_key), options)
