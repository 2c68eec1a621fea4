"""Key derivation from a hash or a MAC, as `cryptography`'s ``kdf`` package (HKDF, X9.63, ...)."""

from cryptography.hazmat.primitives.kdf import KeyDerivationFunction

__all__ = ["KeyDerivationFunction"]
