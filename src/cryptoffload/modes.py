"""The cipher modes cryptoffload offers, as `cryptography`'s classes (CFB, CFB8, OFB: decrepit)."""

from __future__ import annotations

from cryptography.hazmat.decrepit.ciphers.modes import CFB, CFB8, OFB
from cryptography.hazmat.primitives.ciphers.modes import (
    CBC,
    CTR,
    ECB,
    GCM,
    XTS,
    Mode,
    ModeWithAuthenticationTag,
    ModeWithInitializationVector,
    ModeWithNonce,
    ModeWithTweak,
)

__all__ = [
    "CBC",
    "CFB",
    "CFB8",
    "CTR",
    "ECB",
    "GCM",
    "OFB",
    "XTS",
    "Mode",
    "ModeWithAuthenticationTag",
    "ModeWithInitializationVector",
    "ModeWithNonce",
    "ModeWithTweak",
]
