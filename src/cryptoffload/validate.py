"""Checks that hold for every engine, run once above them: sizes, nonces, tags and peer keys."""

from __future__ import annotations

from typing import Any

import gmpy2

AES_KEY_SIZES = (16, 24, 32)
GCM_TAG_SIZES = frozenset({4, 8, 12, 13, 14, 15, 16})
CCM_TAG_SIZES = frozenset({4, 6, 8, 10, 12, 14, 16})
BLOCK = 16


def byteslike(name: str, value: Any) -> None:
    """TypeError unless ``value`` supports the buffer protocol (bytes, bytearray, memoryview...)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return
    try:
        memoryview(value)
    except TypeError:
        raise TypeError(f"{name} must be bytes-like, got {type(value).__name__}") from None


def aes_key(key: Any) -> None:
    """AES key: bytes of 16, 24 or 32."""
    byteslike("key", key)
    if len(key) not in AES_KEY_SIZES:
        raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")


def block_iv(mode: str, iv: Any) -> None:
    """CBC/CTR/CFB/OFB take a 16-byte IV (or initial counter block)."""
    byteslike("iv", iv)
    if len(iv) != BLOCK:
        raise ValueError(f"{mode.upper()} IV must be 16 bytes, got {len(iv)}")


def block_aligned(mode: str, length: int) -> None:
    """ECB and CBC process whole 16-byte blocks (no padding is added)."""
    if length % BLOCK:
        raise ValueError(
            f"{mode.upper()} data must be a multiple of 16 bytes (no padding is applied), "
            f"got {length}"
        )


def gcm_nonce(nonce: Any) -> None:
    """GCM nonce: 8 to 128 bytes; 12 is the one to use."""
    byteslike("nonce", nonce)
    # OpenSSL 3.0 (under cryptography) constrains GCM IVs to [64, 1024] bits.
    if not 8 <= len(nonce) <= 128:
        raise ValueError(f"GCM nonce must be 8 to 128 bytes (12 recommended), got {len(nonce)}")


def gcm_tag_length(length: int) -> None:
    """GCM tag: 4, 8 or 12-16 bytes (SP 800-38D 5.2.1.2)."""
    if length not in GCM_TAG_SIZES:
        raise ValueError(f"GCM tag length must be 4, 8 or 12 to 16 bytes, got {length}")


def ccm_nonce(nonce: Any, data_len: int) -> None:
    """CCM nonce: 7 to 13 bytes, and short enough to leave room to count the data's length."""
    byteslike("nonce", nonce)
    if not 7 <= len(nonce) <= 13:
        raise ValueError(f"CCM nonce must be 7 to 13 bytes, got {len(nonce)}")
    length_bytes = 15 - len(nonce)
    if length_bytes < 8 and data_len >= 1 << (8 * length_bytes):
        raise ValueError(
            f"CCM data of {data_len} bytes is too long for a {len(nonce)}-byte nonce "
            f"(at most {(1 << (8 * length_bytes)) - 1} bytes)"
        )


def ccm_tag_length(length: int) -> None:
    """CCM tag: an even number of bytes from 4 to 16."""
    if length not in CCM_TAG_SIZES:
        raise ValueError(f"CCM tag length must be 4, 6, 8, 10, 12, 14 or 16 bytes, got {length}")


def rsa_input(value: int, modulus: int) -> None:
    """Raw RSA input must satisfy 0 < m < n."""
    if not 0 < value < modulus:
        raise ValueError("RSA input must be in range 0 < m < n")


def ec_public_point(curve: Any, x: int, y: int) -> None:
    """SP 800-56A 5.6.2.3.3 full public key validation: in range, on the curve, right order."""
    from cryptoffload.blocks.curves import is_on_curve, point_mul

    if not (0 <= x < curve.p and 0 <= y < curve.p):
        raise ValueError(f"peer public key coordinates are out of range for {curve.name}")
    if not is_on_curve(curve, x, y):
        raise ValueError(f"peer public key is not a point on {curve.name}")
    # Infinity has no affine coordinates, so it cannot reach here. With cofactor 1 every point on
    # the curve has order n; only other curves need the multiplication.
    if curve.h != 1 and point_mul(curve, curve.n, (x, y)) is not None:
        raise ValueError(f"peer public key is not in the order-n subgroup of {curve.name}")


def dh_public_value(group: Any, y: int) -> None:
    """SP 800-56A 5.6.2.3.1 for a safe-prime group: 2 <= y <= p - 2 and y^q = 1 mod p.

    For a safe prime p = 2q + 1 the order-q subgroup is exactly the quadratic residues, so
    y^q = 1 (mod p) holds exactly when the Legendre symbol (y/p) is 1: the same check, computed
    in microseconds instead of a full-size exponentiation.
    """
    ffc_public_value(group.p, group.q, y, group.name)


def ffc_public_value(p: int, q: int, y: int, name: str = "the group") -> None:
    """SP 800-56A 5.6.2.3.1 for any FFC group (p, q): 2 <= y <= p - 2 and y^q = 1 mod p."""
    if not 2 <= y <= p - 2:
        raise ValueError(f"peer public value is out of range 2 <= y <= p - 2 for {name}")
    in_subgroup = gmpy2.legendre(y, p) == 1 if p == 2 * q + 1 else gmpy2.powmod(y, q, p) == 1
    if not in_subgroup:
        raise ValueError(f"peer public value is not in the prime-order subgroup of {name}")


_MODE_OF: dict[str, str] = {}


def _cipher_op(op: Any) -> None:
    # Every chained Cipher update passes here, so the common case costs a few comparisons;
    # the named checks run only to word a failure.
    key, data, iv = op.key, op.data, op.iv
    if key.__class__ is not bytes or len(key) not in AES_KEY_SIZES:
        aes_key(key)
    if data.__class__ is not bytes:
        byteslike("data", data)
    mode = _MODE_OF.get(op.alg)
    if mode is None:
        mode = _MODE_OF[op.alg] = op.alg.rsplit("-", 1)[1]
    if mode != "ecb" and (iv.__class__ is not bytes or len(iv) != BLOCK):
        block_iv(mode, iv)
    if len(data) % BLOCK and mode in ("ecb", "cbc"):
        block_aligned(mode, len(data))


def _aead_op(op: Any) -> None:
    aes_key(op.key)
    byteslike("data", op.data)
    if op.aad is not None:
        byteslike("associated_data", op.aad)
    tag_len = len(op.tag) if op.kind == "decrypt" else op.length
    if op.alg.endswith("-gcm"):
        gcm_nonce(op.iv)
        gcm_tag_length(tag_len)
    else:
        ccm_nonce(op.iv, len(op.data))
        ccm_tag_length(tag_len)


def _mac_op(op: Any) -> None:
    byteslike("data", op.data)
    kind = op.alg.split("-", 1)[0]
    if kind == "hmac":
        byteslike("key", op.key)
        return
    aes_key(op.key)
    if kind == "gmac":
        gcm_nonce(op.iv)
        gcm_tag_length(op.length)


def _rsa_op(op: Any) -> None:
    if op.kind == "raw":
        if not isinstance(op.data, int) or isinstance(op.data, bool):
            raise TypeError(f"raw RSA input must be an int, got {type(op.data).__name__}")
        numbers = (
            op.key.public_key().public_numbers()
            if op.alg.endswith("-private")
            else (op.key.public_numbers())
        )
        rsa_input(op.data, numbers.n)
    elif op.kind in ("verify", "sign", "encrypt", "decrypt"):
        byteslike("data", op.data)


def _ecdh_op(op: Any) -> None:
    from cryptoffload.blocks.curves import by_cryptography

    if op.peer.curve.name != op.key.curve.name:
        raise ValueError(
            f"peer public key is on {op.peer.curve.name}, expected {op.key.curve.name}"
        )
    numbers = op.peer.public_numbers()
    ec_public_point(by_cryptography(op.key.curve), numbers.x, numbers.y)


def _dh_op(op: Any) -> None:
    from cryptoffload.blocks.ffdhe import group_for_prime

    own = op.key.parameters().parameter_numbers()
    peer = op.peer.public_numbers()
    if peer.parameter_numbers.p != own.p or peer.parameter_numbers.g != own.g:
        raise ValueError("peer public key belongs to another DH group")
    group = group_for_prime(own.p)
    if group is None:
        raise ValueError("only the RFC 7919 FFDHE groups are supported")
    dh_public_value(group, peer.y)


def _rng_op(op: Any) -> None:
    if not isinstance(op.length, int) or op.length < 0:
        raise ValueError(f"seed length must be a non-negative int, got {op.length!r}")


def _hash_op(op: Any) -> None:
    byteslike("data", op.data)


_OP_CHECKS = {
    "cipher": _cipher_op,
    "aead": _aead_op,
    "hash": _hash_op,
    "mac": _mac_op,
    "rsa": _rsa_op,
    "ecdsa": lambda op: byteslike("digest", op.data),
    "ecdh": _ecdh_op,
    "dh": _dh_op,
    "rng": _rng_op,
}


def validate_op(op: Any) -> None:
    """Every check that applies to ``op``, before any engine sees it."""
    check = _OP_CHECKS.get(op.family)
    if check is None:
        raise ValueError(f"unknown operation family {op.family!r}")
    check(op)
