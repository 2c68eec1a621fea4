"""`cryptography`'s ``serialization.pkcs7`` path. Its functions take cryptoffload's keys as they
are: signing and decryption call the key's own ``sign`` / ``decrypt``, so they go through the
provider."""

from __future__ import annotations

from cryptography.hazmat.primitives.serialization import pkcs7 as _pkcs7

from cryptoffload.serialization._mirror import fallback, public_names

globals().update(public_names(_pkcs7))
__all__ = sorted(public_names(_pkcs7))
__getattr__ = fallback(_pkcs7)
