"""The cipher algorithms ``Cipher`` takes, as `cryptography`'s classes (Triple DES: `decrepit`)."""

from cryptography.hazmat.primitives.ciphers import BlockCipherAlgorithm, CipherAlgorithm
from cryptography.hazmat.primitives.ciphers.algorithms import AES, AES128, AES256

__all__ = ["AES", "AES128", "AES256", "BlockCipherAlgorithm", "CipherAlgorithm"]
