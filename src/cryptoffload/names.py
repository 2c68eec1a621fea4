"""One spelling for every algorithm: what the API, counters, policy and bench rows call them."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives import hashes

HASH_NAMES: dict[str, str] = {
    "sha1": "sha1",
    "sha224": "sha224",
    "sha256": "sha256",
    "sha384": "sha384",
    "sha512": "sha512",
    "sha512-224": "sha512_224",
    "sha512-256": "sha512_256",
}
"""Our hash names, mapped to the names hashlib and OpenSSL know them by."""

#: Our hash names -> hashlib constructors (the named ones are faster than hashlib.new(name)).
HASHLIB: dict[str, Callable[..., Any]] = {
    "sha1": hashlib.sha1,
    "sha224": hashlib.sha224,
    "sha256": hashlib.sha256,
    "sha384": hashlib.sha384,
    "sha512": hashlib.sha512,
    "sha512-224": functools.partial(hashlib.new, "sha512_224"),
    "sha512-256": functools.partial(hashlib.new, "sha512_256"),
}

_CRYPTOGRAPHY_HASH = {
    hashes.SHA1.name: "sha1",
    hashes.SHA224.name: "sha224",
    hashes.SHA256.name: "sha256",
    hashes.SHA384.name: "sha384",
    hashes.SHA512.name: "sha512",
    hashes.SHA512_224.name: "sha512-224",
    hashes.SHA512_256.name: "sha512-256",
}

HASH_CLASSES: dict[str, type[hashes.HashAlgorithm]] = {
    "sha1": hashes.SHA1,
    "sha224": hashes.SHA224,
    "sha256": hashes.SHA256,
    "sha384": hashes.SHA384,
    "sha512": hashes.SHA512,
    "sha512-224": hashes.SHA512_224,
    "sha512-256": hashes.SHA512_256,
}

AES_MODES = ("ecb", "cbc", "ctr", "cfb", "ofb", "gcm", "ccm")
RSA_SIZES = (1024, 2048, 3072, 4096)
FFDHE_NAMES = ("ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192")


def hash_name(algorithm: hashes.HashAlgorithm) -> str:
    """Our name of a `cryptography` hash algorithm; TypeError for anything else."""
    try:
        return _CRYPTOGRAPHY_HASH[algorithm.name]
    except (KeyError, AttributeError):
        raise TypeError(
            f"hash algorithm must be one of SHA1, SHA224, SHA256, SHA384, SHA512, SHA512_224, "
            f"SHA512_256 from cryptography.hazmat.primitives.hashes, got {algorithm!r}"
        ) from None


def aes_name(key_len: int, mode: str) -> str:
    """`aes-128-cbc` from a key length in bytes and a mode name."""
    return f"aes-{key_len * 8}-{mode}"


def rsa_name(bits: int, side: str) -> str:
    """`rsa-2048-private` or `rsa-2048-public`."""
    return f"rsa-{bits}-{side}"


def all_algorithms() -> list[str]:
    """Every algorithm name the software engine answers for, in a stable order."""
    from cryptoffload.blocks.curves import CURVES

    names: list[str] = []
    for bits in (128, 192, 256):
        names += [f"aes-{bits}-{mode}" for mode in AES_MODES]
        names += [f"cmac-aes-{bits}", f"gmac-aes-{bits}"]
    names += list(HASH_NAMES)
    names += [f"hmac-{h}" for h in HASH_NAMES]
    for bits in RSA_SIZES:
        names += [rsa_name(bits, "private"), rsa_name(bits, "public")]
    for curve in CURVES:
        names += [f"ecdsa-{curve}-sign", f"ecdsa-{curve}-verify", f"ecdh-{curve}"]
    names += list(FFDHE_NAMES)
    names.append("drbg")
    return names
