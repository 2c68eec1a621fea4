"""One spelling for every algorithm: what the API, counters, policy and bench rows call them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from cryptography.exceptions import UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.decrepit.ciphers import algorithms as decrepit
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import algorithms

HASH_NAMES: dict[str, str] = {
    "sha1": "sha1",
    "sha224": "sha224",
    "sha256": "sha256",
    "sha384": "sha384",
    "sha512": "sha512",
    "sha512-224": "sha512_224",
    "sha512-256": "sha512_256",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
    "shake128": "shake_128",
    "shake256": "shake_256",
    "blake2b": "blake2b",
    "blake2s": "blake2s",
    "sm3": "sm3",
    "md5": "md5",
}
"""Our hash names, mapped to the names hashlib and OpenSSL know them by."""

#: Extendable-output functions: their output length is a parameter (``HashOp.length``).
XOF_NAMES = frozenset({"shake128", "shake256"})


def _hashlib_constructors() -> dict[str, Callable[..., Any]]:
    """Our hash names -> hashlib constructors (the named ones are faster than hashlib.new(name))."""
    import hashlib

    return {
        "sha1": hashlib.sha1,
        "sha224": hashlib.sha224,
        "sha256": hashlib.sha256,
        "sha384": hashlib.sha384,
        "sha512": hashlib.sha512,
        "sha512-224": functools.partial(hashlib.new, "sha512_224"),
        "sha512-256": functools.partial(hashlib.new, "sha512_256"),
        "sha3-224": hashlib.sha3_224,
        "sha3-256": hashlib.sha3_256,
        "sha3-384": hashlib.sha3_384,
        "sha3-512": hashlib.sha3_512,
        "shake128": hashlib.shake_128,
        "shake256": hashlib.shake_256,
        # BLAKE2 through OpenSSL (as `cryptography` runs it), not hashlib's own C code.
        "blake2b": functools.partial(hashlib.new, "blake2b"),
        "blake2s": functools.partial(hashlib.new, "blake2s"),
        "sm3": functools.partial(hashlib.new, "sm3"),
        "md5": hashlib.md5,
    }


def __getattr__(name: str) -> Any:
    # HASHLIB is made at first use: hashlib's import (OpenSSL's _hashlib) is a start-up cost
    # that a program doing no hashing need not pay.
    if name == "HASHLIB":
        value = globals()["HASHLIB"] = _hashlib_constructors()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_CRYPTOGRAPHY_HASH = {
    hashes.SHA1.name: "sha1",
    hashes.SHA224.name: "sha224",
    hashes.SHA256.name: "sha256",
    hashes.SHA384.name: "sha384",
    hashes.SHA512.name: "sha512",
    hashes.SHA512_224.name: "sha512-224",
    hashes.SHA512_256.name: "sha512-256",
    hashes.SHA3_224.name: "sha3-224",
    hashes.SHA3_256.name: "sha3-256",
    hashes.SHA3_384.name: "sha3-384",
    hashes.SHA3_512.name: "sha3-512",
    hashes.SHAKE128.name: "shake128",
    hashes.SHAKE256.name: "shake256",
    hashes.BLAKE2b.name: "blake2b",
    hashes.BLAKE2s.name: "blake2s",
    hashes.SM3.name: "sm3",
    hashes.MD5.name: "md5",
}

#: The SHA-1/SHA-2 family (what signatures, bench rows and the self-test use).
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
#: Modes beyond AES_MODES: AES-CFB8, AES-OCB3 (`ocb`), AES-SIV, AES-GCM-SIV and AES-XTS.
MORE_AES = (
    [f"aes-{bits}-{mode}" for bits in (128, 192, 256) for mode in ("cfb8", "ocb")]
    + [f"aes-{bits}-siv" for bits in (128, 192, 256)]
    + [f"aes-{bits}-gcm-siv" for bits in (128, 192, 256)]
    + ["aes-128-xts", "aes-256-xts"]
)
#: Triple DES (EDE, three keys): `3des-MODE`, and CMAC over it.
TDES_MODES = ("ecb", "cbc", "cfb", "cfb8", "ofb")


class CipherFamily(NamedTuple):
    """A cipher other than AES as the names spell it: ``3des-cbc``, ``camellia-128-cbc``,
    ``sm4-ctr``, ``chacha20`` (a stream cipher has no modes: its name is the family's)."""

    #: Key lengths in bytes the family takes.
    key_sizes: tuple[int, ...]
    #: Bytes per block (a stream cipher: per keystream block, 64 for ChaCha20; 1 for ARC4).
    block: int
    #: The modes OpenSSL runs it in, by our mode names; () for a stream cipher.
    modes: tuple[str, ...] = ()
    #: Whether its names carry the key's bits (``camellia-128-cbc``), as AES's do.
    sized: bool = False
    #: Bytes of IV or nonce when not one block (ChaCha20: a 16-byte counter and nonce).
    iv: int | None = None

    def names(self, family: str) -> list[str]:
        """Every algorithm name of this family."""
        if not self.modes:
            return [family]
        stems = [f"{family}-{n * 8}" for n in self.key_sizes] if self.sized else [family]
        return [f"{stem}-{mode}" for stem in stems for mode in self.modes]


_BLOCK64 = ("ecb", "cbc", "cfb", "ofb")
#: The ciphers other than AES, by the first part of their names. Blowfish, CAST5, IDEA, SEED,
#: RC2 and ARC4 are `cryptography`'s "decrepit" algorithms (OpenSSL's legacy provider).
CIPHER_FAMILIES: dict[str, CipherFamily] = {
    "3des": CipherFamily((24,), 8, TDES_MODES),
    "camellia": CipherFamily((16, 24, 32), 16, _BLOCK64, sized=True),
    "sm4": CipherFamily((16,), 16, ("ecb", "cbc", "ctr", "cfb", "ofb", "gcm")),
    "chacha20": CipherFamily((32,), 64, iv=16),
    "blowfish": CipherFamily(tuple(range(4, 57)), 8, _BLOCK64),
    "cast5": CipherFamily(tuple(range(5, 17)), 8, _BLOCK64),
    "idea": CipherFamily((16,), 8, _BLOCK64),
    "seed": CipherFamily((16,), 16, _BLOCK64),
    "rc2": CipherFamily((16,), 8, ("cbc",)),
    "arc4": CipherFamily((5, 7, 8, 10, 16, 20, 24, 32), 1),
}


#: The `cryptography` algorithm class of each family of :data:`CIPHER_FAMILIES`.
CIPHER_CLASSES: dict[str, type] = {
    "3des": decrepit.TripleDES,
    "camellia": decrepit.Camellia,
    "sm4": algorithms.SM4,
    "chacha20": algorithms.ChaCha20,
    "blowfish": decrepit.Blowfish,
    "cast5": decrepit.CAST5,
    "idea": decrepit.IDEA,
    "seed": decrepit.SEED,
    "rc2": decrepit.RC2,
    "arc4": decrepit.ARC4,
}


def cipher_family(alg: str) -> CipherFamily | None:
    """The family of a cipher name that is not AES's (``sm4-cbc`` -> SM4's), or None."""
    prefix = alg.split("-", 1)[0]
    spec = CIPHER_FAMILIES.get(prefix)
    if spec is None or (not spec.modes and alg != prefix):  # chacha20-poly1305 is an AEAD
        return None
    return spec


#: The AEADs by name that are not AES modes.
MORE_AEADS = ("chacha20-poly1305",)
#: The MACs by name beside HMAC, CMAC and GMAC.
MORE_MACS = ("poly1305",)
RSA_SIZES = (1024, 2048, 3072, 4096)
FFDHE_NAMES = ("ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192")
#: Finite-field DH in groups other than RFC 7919's: `dh-<bits of p>` (these sizes listed).
DH_SIZES = (1024, 2048, 3072, 4096, 6144, 8192)
DSA_SIZES = (1024, 2048, 3072, 4096)
#: EdDSA signatures, and X25519/X448 agreement, by name.
EDDSA_NAMES = ("ed25519-sign", "ed25519-verify", "ed448-sign", "ed448-verify")
XDH_NAMES = ("x25519", "x448")
#: Password-hashing KDFs beside PBKDF2 (``pbkdf2-hmac-<hash>``, one per HMAC hash).
KDF_NAMES = ("scrypt", "argon2d", "argon2i", "argon2id")
#: ML-KEM parameter sets (FIPS 203) and ML-DSA ones (FIPS 204) `cryptography` has.
MLKEM_SIZES = (768, 1024)
MLDSA_SIZES = (44, 65, 87)


def pbkdf2_name(hash_alg: str) -> str:
    """`pbkdf2-hmac-sha256` from our hash name."""
    return f"pbkdf2-hmac-{hash_alg}"


def keywrap_name(key_len: int, padded: bool) -> str:
    """`aes-128-keywrap` (RFC 3394) or `aes-128-keywrap-pad` (RFC 5649) from the wrapping key's
    length in bytes."""
    return f"aes-{key_len * 8}-keywrap" + ("-pad" if padded else "")


@functools.cache
def post_quantum_names() -> tuple[str, ...]:
    """ML-KEM and ML-DSA names (``mlkem-768-encap``, ``mldsa-65-sign``...), each family only
    where the installed `cryptography` has its module."""
    import importlib.util

    def has(module: str) -> bool:
        spec = importlib.util.find_spec(f"cryptography.hazmat.primitives.asymmetric.{module}")
        return spec is not None

    names = []
    if has("mlkem"):
        names += [f"mlkem-{n}-{kind}" for n in MLKEM_SIZES for kind in ("encap", "decap")]
    if has("mldsa"):
        names += [f"mldsa-{n}-{kind}" for n in MLDSA_SIZES for kind in ("sign", "verify")]
    return tuple(names)


def hash_name(algorithm: hashes.HashAlgorithm) -> str:
    """Our name of a `cryptography` hash algorithm instance: TypeError for anything that is not
    one (a class, a string), UnsupportedAlgorithm for a hash algorithm we do not offer."""
    if not isinstance(algorithm, hashes.HashAlgorithm):
        raise TypeError(
            f"Expected instance of hashes.HashAlgorithm (e.g. hashes.SHA256()), got {algorithm!r}"
        )
    name = _CRYPTOGRAPHY_HASH.get(getattr(algorithm, "name", None))
    if name is None:
        raise UnsupportedAlgorithm(
            f"{algorithm.name!r} is not a hash algorithm cryptoffload offers",
            _Reasons.UNSUPPORTED_HASH,
        )
    return name


def aes_name(key_len: int, mode: str) -> str:
    """`aes-128-cbc` from a key length in bytes and a mode name."""
    return f"aes-{key_len * 8}-{mode}"


def rsa_name(bits: int, side: str) -> str:
    """`rsa-2048-private` or `rsa-2048-public`."""
    return f"rsa-{bits}-{side}"


def all_algorithms() -> list[str]:
    """Every algorithm name the software engine answers for, in a stable order."""
    from cryptoffload.blocks.curves import IN_CRYPTOGRAPHY

    names: list[str] = []
    for bits in (128, 192, 256):
        names += [f"aes-{bits}-{mode}" for mode in AES_MODES]
        names += [f"cmac-aes-{bits}", f"gmac-aes-{bits}"]
    names += MORE_AES
    names += MORE_AEADS
    for family, spec in CIPHER_FAMILIES.items():
        names += spec.names(family)
    names.append("cmac-3des")
    names += list(HASH_NAMES)
    names += [f"hmac-{h}" for h in HASH_NAMES if h not in XOF_NAMES]
    names += MORE_MACS
    for bits in RSA_SIZES:
        names += [rsa_name(bits, "private"), rsa_name(bits, "public")]
    for curve in IN_CRYPTOGRAPHY:
        names += [f"ecdsa-{curve}-sign", f"ecdsa-{curve}-verify", f"ecdh-{curve}"]
    names += list(FFDHE_NAMES)
    names += [f"dh-{bits}" for bits in DH_SIZES]
    names += [f"dsa-{bits}-{side}" for bits in DSA_SIZES for side in ("sign", "verify")]
    names += [*EDDSA_NAMES, *XDH_NAMES]
    names.append("drbg")
    names += [pbkdf2_name(h) for h in HASH_NAMES if h not in XOF_NAMES]
    names += KDF_NAMES
    names += [keywrap_name(n, pad) for pad in (False, True) for n in (16, 24, 32)]
    names += post_quantum_names()
    return names
