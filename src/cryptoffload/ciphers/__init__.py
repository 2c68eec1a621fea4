"""Symmetric ciphers through the provider, at `cryptography`'s ``ciphers`` paths (``Cipher``...)."""

from cryptoffload.ciphers import algorithms, base, modes
from cryptoffload.ciphers.algorithms import BlockCipherAlgorithm, CipherAlgorithm
from cryptoffload.ciphers.base import (
    AEADCipherContext,
    AEADDecryptionContext,
    AEADEncryptionContext,
    Cipher,
    CipherContext,
)

__all__ = [
    "AEADCipherContext",
    "AEADDecryptionContext",
    "AEADEncryptionContext",
    "BlockCipherAlgorithm",
    "Cipher",
    "CipherAlgorithm",
    "CipherContext",
    "algorithms",
    "base",
    "modes",
]
