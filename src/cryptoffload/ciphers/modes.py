"""The cipher modes ``Cipher`` takes, at `cryptography`'s ``ciphers.modes`` path."""

from cryptoffload.modes import (
    CBC,
    CFB,
    CFB8,
    CTR,
    ECB,
    GCM,
    OFB,
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
