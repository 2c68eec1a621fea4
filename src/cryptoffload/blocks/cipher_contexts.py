"""`cryptography`'s compiled makers of OpenSSL cipher contexts: what its ``Cipher.encryptor`` and
``decryptor`` call once the algorithm and mode are checked (None under another layout of
`cryptography`, whose callers then make a ``Cipher`` as before)."""

from __future__ import annotations

from typing import Any

try:
    from cryptography.hazmat.bindings._rust import openssl as _rust_openssl

    #: (make an encryption context, make a decryption context), each ``(algorithm, mode)``.
    MAKE_CONTEXT: tuple[Any, Any] | None = (
        _rust_openssl.ciphers.create_encryption_ctx,
        _rust_openssl.ciphers.create_decryption_ctx,
    )
except (ImportError, AttributeError):
    MAKE_CONTEXT = None
