"""The cipher modes ``Cipher`` takes, at `cryptography`'s ``ciphers.modes`` path.

CFB, CFB8 and OFB are looked up in `cryptography`'s own module, which warns that they moved to
its ``decrepit`` package, as it does for its users (``cryptoffload.modes`` has them quietly).
"""

from cryptography.hazmat.primitives.ciphers import modes as _theirs

from cryptoffload.ciphers._moved import forwarder
from cryptoffload.modes import (
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
    "CTR",
    "ECB",
    "GCM",
    "XTS",
    "Mode",
    "ModeWithAuthenticationTag",
    "ModeWithInitializationVector",
    "ModeWithNonce",
    "ModeWithTweak",
]

#: Names `cryptography` keeps here with a deprecation warning (they live in ``decrepit``).
_MOVED = ("CFB", "CFB8", "OFB")
__getattr__ = forwarder(_theirs, _MOVED, __name__)


def __dir__() -> list[str]:
    return sorted([*__all__, *_MOVED])
