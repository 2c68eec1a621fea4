"""PKCS #1 (RFC 8017) RSA paddings in software, around a raw modular exponentiation."""

from __future__ import annotations

import os

# hmac.compare_digest without hmac's import (it loads hashlib and OpenSSL's _hashlib, a start-up
# cost): the constant-time comparison hmac itself falls back to.
from _operator import _compare_digest as compare_digest
from collections.abc import Callable
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import utils as _asym_utils

from cryptoffload.blocks._gmp import gmp
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.errors import NoResult

#: RSA paddings: loaded at the first RSA operation (its import is a start-up cost).
_padding = LazyModule("cryptography.hazmat.primitives.asymmetric.padding")

__all__ = [
    "DIGEST_INFO_PREFIXES",
    "SHA1_DIGEST_INFO",
    "SHA224_DIGEST_INFO",
    "SHA256_DIGEST_INFO",
    "SHA384_DIGEST_INFO",
    "SHA512_224_DIGEST_INFO",
    "SHA512_256_DIGEST_INFO",
    "SHA512_DIGEST_INFO",
    "decrypt_with_raw",
    "eme_oaep_decode",
    "eme_oaep_encode",
    "eme_pkcs1v15_decode",
    "eme_pkcs1v15_encode",
    "emsa_pkcs1v15_encode",
    "emsa_pss_encode",
    "emsa_pss_verify",
    "encrypt_with_raw",
    "i2osp",
    "mgf1",
    "oaep_params",
    "os2ip",
    "pss_params",
    "rsa_private_raw",
    "rsa_public_raw",
    "salt_length_for",
    "sign_with_raw",
    "verify_with_raw",
]

# DER of DigestInfo ::= SEQUENCE { AlgorithmIdentifier { oid, NULL }, OCTET STRING <digest> }
# up to the digest itself (RFC 8017 section 9.2, note 1).
SHA1_DIGEST_INFO = bytes.fromhex("3021300906052b0e03021a05000414")
SHA224_DIGEST_INFO = bytes.fromhex("302d300d06096086480165030402040500041c")
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
SHA384_DIGEST_INFO = bytes.fromhex("3041300d060960864801650304020205000430")
SHA512_DIGEST_INFO = bytes.fromhex("3051300d060960864801650304020305000440")
SHA512_224_DIGEST_INFO = bytes.fromhex("302d300d06096086480165030402050500041c")
SHA512_256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020605000420")

DIGEST_INFO_PREFIXES: dict[str, bytes] = {
    hashes.SHA1.name: SHA1_DIGEST_INFO,
    hashes.SHA224.name: SHA224_DIGEST_INFO,
    hashes.SHA256.name: SHA256_DIGEST_INFO,
    hashes.SHA384.name: SHA384_DIGEST_INFO,
    hashes.SHA512.name: SHA512_DIGEST_INFO,
    hashes.SHA512_224.name: SHA512_224_DIGEST_INFO,
    hashes.SHA512_256.name: SHA512_256_DIGEST_INFO,
}

_DECRYPTION_FAILED = "Decryption failed"
_RANGE_ERROR = "input must be in range 0 < m < n"

RawOp = Callable[[int], int]


def i2osp(x: int, length: int) -> bytes:
    """Integer to big-endian octet string of exactly ``length`` bytes (RFC 8017 4.1)."""
    if x < 0:
        raise ValueError("integer must be non-negative")
    if length < 0 or x >> (8 * length):
        raise ValueError("integer too large")
    return x.to_bytes(length, "big")


def os2ip(b: bytes) -> int:
    """Big-endian octet string to integer (RFC 8017 4.2)."""
    return int.from_bytes(b, "big")


def _hash(alg: hashes.HashAlgorithm, data: bytes) -> bytes:
    h = hashes.Hash(alg)
    h.update(data)
    return h.finalize()


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


def _unwrap_hash(hash_alg: hashes.HashAlgorithm | _asym_utils.Prehashed) -> hashes.HashAlgorithm:
    if isinstance(hash_alg, _asym_utils.Prehashed):
        return _private_attr(hash_alg, "_algorithm")
    if not isinstance(hash_alg, hashes.HashAlgorithm):
        raise TypeError("hash_alg must be a cryptography HashAlgorithm or Prehashed")
    return hash_alg


def _check_digest(digest: bytes, hash_alg: hashes.HashAlgorithm) -> None:
    if len(digest) != hash_alg.digest_size:
        raise ValueError("The provided digest must be the same length as the hash's digest size.")


def mgf1(seed: bytes, length: int, hash_alg: hashes.HashAlgorithm) -> bytes:
    """MGF1 mask of ``length`` bytes from ``seed`` (RFC 8017 B.2.1)."""
    h_len = hash_alg.digest_size
    if length < 0 or length > (h_len << 32):
        raise ValueError("mask too long")
    blocks = [_hash(hash_alg, seed + i2osp(i, 4)) for i in range(-(-length // h_len))]
    return b"".join(blocks)[:length]


def rsa_public_raw(c: int, n: int, e: int) -> int:
    """RSAEP / RSAVP1: ``c ** e mod n``."""
    if not 0 < c < n:
        raise ValueError(_RANGE_ERROR)
    return int(gmp().powmod(c, e, n))


def rsa_private_raw(
    m: int,
    n: int,
    d: int,
    p: int | None = None,
    q: int | None = None,
    dmp1: int | None = None,
    dmq1: int | None = None,
    iqmp: int | None = None,
) -> int:
    """RSADP / RSASP1: ``m ** d mod n``, through the CRT when p, q, dmp1, dmq1, iqmp are all given.

    The result is not checked against the public exponent; a caller that fears faults does that.
    """
    if not 0 < m < n:
        raise ValueError(_RANGE_ERROR)
    crt = (p, q, dmp1, dmq1, iqmp)
    if all(v is None for v in crt):
        return int(gmp().powmod(m, d, n))
    if p is None or q is None or dmp1 is None or dmq1 is None or iqmp is None:
        raise ValueError("give all of p, q, dmp1, dmq1, iqmp for the CRT, or none of them")
    powmod = gmp().powmod
    m1 = int(powmod(m, dmp1, p))
    m2 = int(powmod(m, dmq1, q))
    h = (iqmp * (m1 - m2)) % p
    return m2 + h * q


def emsa_pkcs1v15_encode(digest: bytes, hash_alg: hashes.HashAlgorithm, em_len: int) -> bytes:
    """EM = 0x00 0x01 FF..FF 0x00 DigestInfo (RFC 8017 9.2), from an already computed digest."""
    hash_alg = _unwrap_hash(hash_alg)
    prefix = DIGEST_INFO_PREFIXES.get(hash_alg.name)
    if prefix is None:
        raise UnsupportedAlgorithm(f"no PKCS #1 v1.5 DigestInfo for hash {hash_alg.name!r}")
    _check_digest(digest, hash_alg)
    t = prefix + digest
    if em_len < len(t) + 11:
        raise ValueError("intended encoded message length too short for this hash")
    return b"\x00\x01" + b"\xff" * (em_len - len(t) - 3) + b"\x00" + t


def emsa_pss_encode(
    digest: bytes,
    hash_alg: hashes.HashAlgorithm,
    mgf_hash_alg: hashes.HashAlgorithm,
    salt_length: int,
    em_bits: int,
    salt: bytes | None = None,
) -> bytes:
    """EMSA-PSS-ENCODE (RFC 8017 9.1.1) of a digest; ``salt`` fixes the salt for known answers."""
    hash_alg = _unwrap_hash(hash_alg)
    _check_digest(digest, hash_alg)
    h_len = hash_alg.digest_size
    em_len = -(-em_bits // 8)
    if salt_length < 0:
        raise ValueError("salt length must be zero or greater")
    if em_len < h_len + salt_length + 2:
        raise ValueError("digest and salt too large for the key size")
    if salt is None:
        salt = os.urandom(salt_length)
    elif len(salt) != salt_length:
        raise ValueError("salt length does not match salt_length")
    h = _hash(hash_alg, b"\x00" * 8 + digest + salt)
    db = b"\x00" * (em_len - salt_length - h_len - 2) + b"\x01" + salt
    masked_db = bytearray(_xor(db, mgf1(h, em_len - h_len - 1, mgf_hash_alg)))
    masked_db[0] &= 0xFF >> (8 * em_len - em_bits)
    return bytes(masked_db) + h + b"\xbc"


def emsa_pss_verify(
    digest: bytes,
    em: bytes,
    hash_alg: hashes.HashAlgorithm,
    mgf_hash_alg: hashes.HashAlgorithm,
    salt_length: int | None,
    em_bits: int,
) -> bool:
    """EMSA-PSS-VERIFY (RFC 8017 9.1.2); ``salt_length=None`` accepts any salt length."""
    hash_alg = _unwrap_hash(hash_alg)
    _check_digest(digest, hash_alg)
    h_len = hash_alg.digest_size
    em_len = -(-em_bits // 8)
    min_len = h_len + 2 + (salt_length or 0)
    if len(em) != em_len or em_len < min_len or em[-1] != 0xBC:
        return False
    masked_db, h = em[: em_len - h_len - 1], em[em_len - h_len - 1 : -1]
    top_mask = 0xFF >> (8 * em_len - em_bits)
    if masked_db[0] & ~top_mask & 0xFF:
        return False
    db = bytearray(_xor(masked_db, mgf1(h, len(masked_db), mgf_hash_alg)))
    db[0] &= top_mask
    # Everything here is public (signature, digest), so plain early exits are fine.
    if salt_length is None:
        one = next((i for i, byte in enumerate(db) if byte), None)
        if one is None or db[one] != 0x01:
            return False
    else:
        one = len(db) - salt_length - 1
        if any(db[:one]) or db[one] != 0x01:
            return False
    salt = bytes(db[one + 1 :])
    return compare_digest(h, _hash(hash_alg, b"\x00" * 8 + digest + salt))


def eme_oaep_encode(
    message: bytes,
    k: int,
    hash_alg: hashes.HashAlgorithm,
    mgf_hash_alg: hashes.HashAlgorithm,
    label: bytes = b"",
    seed: bytes | None = None,
) -> bytes:
    """EME-OAEP encoding (RFC 8017 7.1.1 step 2) to ``k`` bytes; ``seed`` fixes the randomness."""
    h_len = hash_alg.digest_size
    if len(message) > k - 2 * h_len - 2:
        raise ValueError("message too long for OAEP with this key and hash")
    if seed is None:
        seed = os.urandom(h_len)
    elif len(seed) != h_len:
        raise ValueError("OAEP seed must be as long as the hash")
    db = _hash(hash_alg, label) + b"\x00" * (k - len(message) - 2 * h_len - 2) + b"\x01" + message
    masked_db = _xor(db, mgf1(seed, k - h_len - 1, mgf_hash_alg))
    masked_seed = _xor(seed, mgf1(masked_db, h_len, mgf_hash_alg))
    return b"\x00" + masked_seed + masked_db


def _is_zero(byte: int) -> int:
    """1 if ``byte`` (0..255) is zero, else 0, by arithmetic rather than a branch."""
    return ((byte - 1) >> 8) & 1


def eme_oaep_decode(
    em: bytes,
    k: int,
    hash_alg: hashes.HashAlgorithm,
    mgf_hash_alg: hashes.HashAlgorithm,
    label: bytes = b"",
) -> bytes:
    """EME-OAEP decoding (RFC 8017 7.1.2 step 3); any malformed encoding -> ValueError."""
    h_len = hash_alg.digest_size
    # Lengths are public: failing early on them leaks nothing about the plaintext.
    if len(em) != k or k < 2 * h_len + 2:
        raise NoResult(_DECRYPTION_FAILED)
    # The checks below avoid early exits and data-dependent branches so that the reason for a
    # failure is not told apart by timing (Manger's attack). CPython cannot promise constant
    # time, so this narrows the signal rather than removing it.
    masked_seed, masked_db = em[1 : 1 + h_len], em[1 + h_len :]
    seed = _xor(masked_seed, mgf1(masked_db, h_len, mgf_hash_alg))
    db = _xor(masked_db, mgf1(seed, k - h_len - 1, mgf_hash_alg))
    good = _is_zero(em[0]) & int(compare_digest(db[:h_len], _hash(hash_alg, label)))
    found = 0
    index = 0
    for i in range(h_len, len(db)):
        byte = db[i]
        first_one = _is_zero(byte ^ 0x01) & (found ^ 1)
        good &= found | _is_zero(byte) | first_one
        select = -first_one
        index = (i & select) | (index & ~select)
        found |= first_one
    good &= found
    if not good:
        raise NoResult(_DECRYPTION_FAILED)
    return db[index + 1 :]


def _nonzero_random(length: int) -> bytes:
    out = bytearray()
    while len(out) < length:
        out += os.urandom(length - len(out) + 8).replace(b"\x00", b"")
    return bytes(out[:length])


def eme_pkcs1v15_encode(message: bytes, k: int, random_bytes: bytes | None = None) -> bytes:
    """EM = 0x00 0x02 PS 0x00 M (RFC 8017 7.2.1); ``random_bytes`` fixes PS (nonzero bytes)."""
    ps_len = k - len(message) - 3
    if ps_len < 8:
        raise ValueError("message too long for PKCS #1 v1.5 encryption with this key")
    if random_bytes is None:
        random_bytes = _nonzero_random(ps_len)
    elif len(random_bytes) != ps_len or 0 in random_bytes:
        raise ValueError(f"random_bytes must be {ps_len} nonzero bytes")
    return b"\x00\x02" + random_bytes + b"\x00" + message


def eme_pkcs1v15_decode(em: bytes, k: int) -> bytes:
    """EME-PKCS1-v1_5 decoding (RFC 8017 7.2.2 step 3); any malformed encoding -> ValueError."""
    if len(em) != k or k < 11:
        raise NoResult(_DECRYPTION_FAILED)
    # Same approach as eme_oaep_decode (Bleichenbacher's attack); CPython cannot promise
    # constant time either.
    good = _is_zero(em[0]) & _is_zero(em[1] ^ 0x02)
    found = 0
    index = 0
    for i in range(2, k):
        first_zero = _is_zero(em[i]) & (found ^ 1)
        select = -first_zero
        index = (i & select) | (index & ~select)
        found |= first_zero
    # PS is em[2:index] and must be at least 8 bytes long: index >= 10.
    good &= found & int(index >= 10)
    if not good:
        raise NoResult(_DECRYPTION_FAILED)
    return em[index + 1 :]


def _private_attr(obj: object, name: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        raise TypeError(
            f"{type(obj).__name__} has no {name!r}: cryptoffload.blocks.pkcs1 reads cryptography's "
            "private padding attributes (as of cryptography 48) and this version differs"
        ) from None


def _mgf1_hash(mgf: object) -> hashes.HashAlgorithm:
    if not isinstance(mgf, _padding.MGF1):
        raise TypeError(f"only MGF1 is supported as mask generation function, not {mgf!r}")
    return _private_attr(mgf, "_algorithm")


def pss_params(padding: _padding.PSS) -> tuple[hashes.HashAlgorithm, object]:
    """(MGF1 hash, salt length spec) of a ``padding.PSS``; the spec is an int or a PSS constant."""
    if not isinstance(padding, _padding.PSS):
        raise TypeError(f"expected padding.PSS, got {type(padding).__name__}")
    return _mgf1_hash(_private_attr(padding, "_mgf")), _private_attr(padding, "_salt_length")


def oaep_params(
    padding: _padding.OAEP,
) -> tuple[hashes.HashAlgorithm, hashes.HashAlgorithm, bytes]:
    """(hash, MGF1 hash, label) of a ``padding.OAEP``; a ``None`` label becomes ``b""``."""
    if not isinstance(padding, _padding.OAEP):
        raise TypeError(f"expected padding.OAEP, got {type(padding).__name__}")
    label = _private_attr(padding, "_label")
    return (
        _private_attr(padding, "_algorithm"),
        _mgf1_hash(_private_attr(padding, "_mgf")),
        b"" if label is None else bytes(label),
    )


def salt_length_for(
    padding_pss: _padding.PSS,
    hash_alg: hashes.HashAlgorithm,
    key_bits: int,
    *,
    verify: bool = False,
) -> int | None:
    """Resolve a PSS salt length spec to an int, or to None for "recover any" when verifying.

    AUTO is for verifying only. MAX_LENGTH is the largest salt the key allows when signing, and
    "recover any" when verifying: cryptography 48 (through OpenSSL) accepts any salt length then.
    """
    hash_alg = _unwrap_hash(hash_alg)
    spec = pss_params(padding_pss)[1]
    if not isinstance(spec, int):
        if spec is _padding.PSS.MAX_LENGTH and verify:
            return None
        if spec is _padding.PSS.MAX_LENGTH:
            em_len = -(-(key_bits - 1) // 8)
            spec = em_len - hash_alg.digest_size - 2
            if spec < 0:
                raise ValueError("digest too large for the key size")
        elif spec is _padding.PSS.DIGEST_LENGTH:
            spec = hash_alg.digest_size
        elif spec is _padding.PSS.AUTO:
            if not verify:
                raise ValueError("PSS salt length can only be set to AUTO when verifying")
            return None
        else:
            raise TypeError(f"unknown PSS salt length {spec!r}")
    if spec < 0:
        raise ValueError("salt length must be zero or greater")
    return spec


def _padding_kind(padding: object, allowed: tuple[type, ...], what: str) -> None:
    if not isinstance(padding, allowed):
        names = " or ".join(t.__name__ for t in allowed)
        raise TypeError(f"{what} needs padding {names}, got {type(padding).__name__}")


def check_signature_length(signature: Any, key_bits: int) -> None:
    """Raise InvalidSignature unless the signature is exactly k bytes (RFC 8017 8.1.2 / 8.2.2
    step 1). OpenSSL takes a PSS signature one byte short when its leading byte was zero; every
    path of this package refuses it, so all give one answer."""
    if memoryview(signature).nbytes != _byte_len(key_bits):
        raise InvalidSignature


def _byte_len(key_bits: int) -> int:
    if key_bits < 1:
        raise ValueError("key_bits must be positive")
    return -(-key_bits // 8)


def sign_with_raw(
    raw_private: RawOp,
    key_bits: int,
    digest: bytes,
    padding: _padding.PKCS1v15 | _padding.PSS,
    hash_alg: hashes.HashAlgorithm,
) -> bytes:
    """RSASSA-PKCS1-v1_5 / RSASSA-PSS signature of a digest, with ``raw_private`` doing ``m**d``."""
    _padding_kind(padding, (_padding.PKCS1v15, _padding.PSS), "signing")
    hash_alg = _unwrap_hash(hash_alg)
    k = _byte_len(key_bits)
    if isinstance(padding, _padding.PSS):
        mgf_hash = pss_params(padding)[0]
        salt_length = salt_length_for(padding, hash_alg, key_bits)
        assert salt_length is not None
        em = emsa_pss_encode(digest, hash_alg, mgf_hash, salt_length, key_bits - 1)
    else:
        em = emsa_pkcs1v15_encode(digest, hash_alg, k)
    return i2osp(raw_private(os2ip(em)), k)


def verify_with_raw(
    raw_public: RawOp,
    key_bits: int,
    signature: bytes,
    digest: bytes,
    padding: _padding.PKCS1v15 | _padding.PSS,
    hash_alg: hashes.HashAlgorithm,
    *,
    modulus: int,
) -> None:
    """Check a PKCS1v15 / PSS signature of a digest, with ``raw_public`` doing ``s**e mod n``.

    ``modulus`` is required because the range check s < n is the verifier's and a raw engine may
    silently reduce its input. Raises InvalidSignature on any mismatch, ValueError on a caller
    error (digest length, key_bits not matching the modulus).
    """
    _padding_kind(padding, (_padding.PKCS1v15, _padding.PSS), "verification")
    hash_alg = _unwrap_hash(hash_alg)
    _check_digest(digest, hash_alg)
    if modulus.bit_length() != key_bits:
        raise ValueError("key_bits does not match the modulus")
    k = _byte_len(key_bits)
    em_bits = key_bits - 1
    if isinstance(padding, _padding.PSS):
        mgf_hash = pss_params(padding)[0]
        salt_length = salt_length_for(padding, hash_alg, key_bits, verify=True)

        def check(m: int) -> bool:
            em = i2osp(m, -(-em_bits // 8))
            return emsa_pss_verify(digest, em, hash_alg, mgf_hash, salt_length, em_bits)

    else:
        expected = emsa_pkcs1v15_encode(digest, hash_alg, k)

        def check(m: int) -> bool:
            return compare_digest(i2osp(m, k), expected)

    check_signature_length(signature, key_bits)
    s = os2ip(signature)
    if s >= modulus:
        raise InvalidSignature
    try:
        ok = check(raw_public(s))
    except ValueError:
        # raw_public refusing s (e.g. s == 0), or a representative too long for the encoding.
        ok = False
    if not ok:
        raise InvalidSignature


def encrypt_with_raw(
    raw_public: RawOp,
    key_bits: int,
    message: bytes,
    padding: _padding.PKCS1v15 | _padding.OAEP,
) -> bytes:
    """RSAES-PKCS1-v1_5 / RSAES-OAEP encryption, with ``raw_public`` doing ``m**e mod n``."""
    _padding_kind(padding, (_padding.PKCS1v15, _padding.OAEP), "encryption")
    k = _byte_len(key_bits)
    if isinstance(padding, _padding.OAEP):
        hash_alg, mgf_hash, label = oaep_params(padding)
        em = eme_oaep_encode(message, k, hash_alg, mgf_hash, label)
    else:
        em = eme_pkcs1v15_encode(message, k)
    return i2osp(raw_public(os2ip(em)), k)


def decrypt_with_raw(
    raw_private: RawOp,
    key_bits: int,
    ciphertext: bytes,
    padding: _padding.PKCS1v15 | _padding.OAEP,
    *,
    modulus: int | None = None,
) -> bytes:
    """RSAES-PKCS1-v1_5 / RSAES-OAEP decryption, with ``raw_private`` doing ``c**d mod n``.

    Every failure after the length check is ``errors.NoResult`` ("Decryption failed"), the
    ValueError that is the operation's answer. With ``modulus`` the
    range check c < n is done here; without it ``raw_private`` must reject c >= n with ValueError.
    """
    _padding_kind(padding, (_padding.PKCS1v15, _padding.OAEP), "decryption")
    k = _byte_len(key_bits)
    if len(ciphertext) != k:
        raise ValueError("Ciphertext length must be equal to key size.")
    if isinstance(padding, _padding.OAEP):
        hash_alg, mgf_hash, label = oaep_params(padding)

        def decode(em: bytes) -> bytes:
            return eme_oaep_decode(em, k, hash_alg, mgf_hash, label)

    else:

        def decode(em: bytes) -> bytes:
            return eme_pkcs1v15_decode(em, k)

    c = os2ip(ciphertext)
    if modulus is not None and c >= modulus:
        raise NoResult(_DECRYPTION_FAILED)
    try:
        em = i2osp(raw_private(c), k)
    except ValueError:
        raise NoResult(_DECRYPTION_FAILED) from None
    return decode(em)
