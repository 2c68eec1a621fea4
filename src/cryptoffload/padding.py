"""Block padding (PKCS7, ANSI X9.23) at `cryptography`'s ``padding`` path: its own classes, which
pad on the CPU in the caller (no key, nothing an engine could take)."""

from cryptography.hazmat.primitives.padding import (
    ANSIX923,
    PKCS7,
    ANSIX923PaddingContext,
    ANSIX923UnpaddingContext,
    PaddingContext,
    PKCS7PaddingContext,
    PKCS7UnpaddingContext,
)

__all__ = [
    "ANSIX923",
    "PKCS7",
    "ANSIX923PaddingContext",
    "ANSIX923UnpaddingContext",
    "PKCS7PaddingContext",
    "PKCS7UnpaddingContext",
    "PaddingContext",
]
