"""Symmetric ciphers through the provider, at `cryptography`'s ``ciphers`` paths (``Cipher``...)."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cryptoffload.ciphers import algorithms, base, modes
    from cryptoffload.ciphers.algorithms import BlockCipherAlgorithm, CipherAlgorithm
    from cryptoffload.ciphers.base import (
        AEADCipherContext,
        AEADDecryptionContext,
        AEADEncryptionContext,
        Cipher,
        CipherContext,
    )

#: The package's names and the modules that define them, loaded at first use: a program that
#: imports ``ciphers.aead`` (AESGCM...) passes through this package, and need not load Cipher's.
_LAZY = {
    **dict.fromkeys(("algorithms", "base", "modes"), ""),
    **dict.fromkeys(("BlockCipherAlgorithm", "CipherAlgorithm"), "algorithms"),
    **dict.fromkeys(
        (
            "AEADCipherContext",
            "AEADDecryptionContext",
            "AEADEncryptionContext",
            "Cipher",
            "CipherContext",
        ),
        "base",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    else:
        value = importlib.import_module(f"{__name__}.{name}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
