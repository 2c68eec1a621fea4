"""The cipher algorithms ``Cipher`` takes, as `cryptography`'s classes, at its ``algorithms`` path.

Every one runs through the provider (names.CIPHER_FAMILIES). ARC4, TripleDES and Camellia are
looked up in `cryptography`'s own module, which warns that they moved to its ``decrepit``
package, as it does for its users.
"""

from typing import Any

from cryptography.hazmat.primitives.ciphers import BlockCipherAlgorithm, CipherAlgorithm
from cryptography.hazmat.primitives.ciphers import algorithms as _theirs
from cryptography.hazmat.primitives.ciphers.algorithms import (
    AES,
    AES128,
    AES256,
    CAST5,
    IDEA,
    SEED,
    SM4,
    Blowfish,
    ChaCha20,
)

__all__ = [
    "AES",
    "AES128",
    "AES256",
    "CAST5",
    "IDEA",
    "SEED",
    "SM4",
    "BlockCipherAlgorithm",
    "Blowfish",
    "ChaCha20",
    "CipherAlgorithm",
]

#: Names `cryptography` keeps here with a deprecation warning (they live in ``decrepit``).
_MOVED = frozenset({"ARC4", "TripleDES", "Camellia"})


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return getattr(_theirs, name)  # `cryptography` warns as it hands it over
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
