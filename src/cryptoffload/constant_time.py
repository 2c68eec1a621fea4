"""Constant-time comparison, as `cryptography`'s ``constant_time`` (no operation to offload)."""

from __future__ import annotations

import hmac

__all__ = ["bytes_eq"]


def bytes_eq(a: bytes, b: bytes) -> bool:
    """Whether ``a`` and ``b`` are equal, in time that does not depend on where they differ."""
    if not isinstance(a, bytes) or not isinstance(b, bytes):
        raise TypeError("a and b must be bytes.")
    return hmac.compare_digest(a, b)
