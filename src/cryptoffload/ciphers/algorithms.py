"""The cipher algorithms ``Cipher`` takes, as `cryptography`'s classes, at its ``algorithms`` path.

Every one runs through the provider (names.CIPHER_FAMILIES). ARC4, TripleDES and Camellia are
looked up in `cryptography`'s own module, which warns that they moved to its ``decrepit``
package, as it does for its users.
"""

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

from cryptoffload.ciphers._moved import forwarder

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
_MOVED = ("ARC4", "TripleDES", "Camellia")
__getattr__ = forwarder(_theirs, _MOVED, __name__)


def __dir__() -> list[str]:
    return sorted([*__all__, *_MOVED])
