"""Checks that hold for every engine, run once above them: sizes, nonces, tags and peer keys."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.exceptions import InvalidTag, UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.keywrap import InvalidUnwrap

from cryptoffload.blocks import ivs
from cryptoffload.blocks._gmp import gmp
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.core.names import (
    CIPHER_FAMILIES,
    HASH_NAMES,
    KDF_NAMES,
    MLDSA_SIZES,
    MLKEM_SIZES,
    XOF_NAMES,
    cipher_family,
    hash_name,
)
from cryptoffload.devicekey import DeviceKey

#: RSA paddings: loaded at the first RSA operation (its import is a start-up cost).
padding = LazyModule("cryptography.hazmat.primitives.asymmetric.padding")
#: RSA's padding rules: loaded at the first RSA operation too.
pkcs1 = LazyModule("cryptoffload.blocks.pkcs1")

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


def batch(call: str, items: Any, each: str, size: int = 0) -> list[Any]:
    """A batch's items as a list, its shape checked once before any work: TypeError unless
    ``items`` is an iterable of items (not bytes, a str or a mapping) and, when ``size`` is set,
    each item a tuple or list of ``size`` fields. ``each`` says what an item must be."""
    if isinstance(items, (str, bytes, bytearray, memoryview, Mapping)) or not hasattr(
        items, "__iter__"
    ):
        raise TypeError(
            f"{call} takes an iterable (a list...) of items, each a {each}; "
            f"got {type(items).__name__}"
        )
    items = list(items)
    if size:
        for i, item in enumerate(items):
            if not isinstance(item, (tuple, list)) or len(item) != size:
                got = (
                    f"a {len(item)}-{type(item).__name__}"
                    if isinstance(item, (tuple, list))
                    else type(item).__name__
                )
                raise TypeError(f"{call}: item {i} must be a {each}, got {got}")
    return items


def aes_key(key: Any) -> None:
    """AES key: bytes of 16, 24 or 32, or a DeviceKey (bound to an engine's hardware)."""
    if isinstance(key, DeviceKey):
        return
    byteslike("key", key)
    if len(key) not in AES_KEY_SIZES:
        raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")


def block_iv(mode: str, iv: Any, size: int = BLOCK) -> None:
    """CBC/CTR/CFB/CFB8/OFB take an IV (or initial counter block) of one block, XTS a 16-byte
    tweak."""
    byteslike("iv", iv)
    if len(iv) != size:
        raise ValueError(f"{mode.upper()} IV must be {size} bytes, got {len(iv)}")


def block_aligned(mode: str, length: int, size: int = BLOCK) -> None:
    """ECB and CBC process whole blocks (no padding is added)."""
    if length % size:
        raise ValueError(
            f"{mode.upper()} data must be a multiple of {size} bytes (no padding is applied), "
            f"got {length}"
        )


@functools.cache
def aes_key_bytes(alg: str) -> int:
    """The AES key length in bytes an algorithm name carries (``aes-192-gcm``, ``cmac-aes-256``)."""
    known = _AES_KEY_BYTES.get(alg)
    if known is not None:
        return known
    bits = next((part for part in alg.split("-") if part in ("128", "192", "256")), None)
    if bits is None:
        raise ValueError(f"{alg!r} names no AES key size")
    if len(_AES_KEY_BYTES) < 256:  # the names ops carry: a few dozen (any str may come in)
        _AES_KEY_BYTES[alg] = int(bits) // 8
    return int(bits) // 8


#: aes_key_bytes's answers so far: every AES op's validation asks it (a dict look-up instead of
#: splitting the name).
_AES_KEY_BYTES: dict[str, int] = {}


def aes_key_for(alg: str, key: Any) -> None:
    """An AES key (bytes or a DeviceKey) as long as ``alg`` says: an op under ``aes-128-...``
    with a 32-byte key would run AES-256 and be counted as AES-128."""
    aes_key(key)
    want = aes_key_bytes(alg)
    if len(key) != want:
        raise ValueError(f"{alg} takes a {want}-byte key, got {len(key)}")


def cipher_key(alg: str, key: Any, sizes: tuple[int, ...]) -> None:
    """A cipher key of one of ``sizes`` bytes (AES outside XTS: as long as the name says, or a
    DeviceKey of that size)."""
    if alg.startswith("aes-") and not alg.endswith("-xts"):
        aes_key_for(alg, key)
        return
    byteslike("key", key)
    if len(key) not in sizes:
        if len(sizes) > 3 and sizes == tuple(range(sizes[0], sizes[-1] + 1)):
            wanted = f"between {sizes[0]} and {sizes[-1]}"
        else:
            wanted = " or ".join(str(n) for n in sizes)
        raise ValueError(f"{alg} key must be {wanted} bytes, got {len(key)}")


def chacha20_room(nonce: bytes, length: int) -> None:
    """ChaCha20 from the counter in ``nonce`` (its first 4 bytes, little-endian) must not run
    past the last of its 2**32 blocks: `cryptography` refuses it too (ValueError)."""
    start = ivs.chacha20_counter(nonce) * 64
    if start + length > ivs.CHACHA20_BLOCKS * 64:
        raise ValueError(
            f"ChaCha20 counter would overflow: {length} bytes from block "
            f"{start // 64} run past the 2**32 blocks of one nonce"
        )


def xts_keys(key: Any) -> None:
    """An XTS key's two halves must differ (OpenSSL refuses to encrypt with duplicated keys)."""
    half = len(key) // 2
    if bytes(key[:half]) == bytes(key[half:]):
        raise ValueError("In XTS mode duplicated keys are not allowed")


#: Bytes of a Poly1305 key: r and s, 16 bytes each (RFC 8439 2.5).
POLY1305_KEY = 32


def poly1305_key(key: Any) -> None:
    """A Poly1305 key: bytes-like, 32 bytes."""
    byteslike("key", key)
    n = len(key) if isinstance(key, (bytes, bytearray)) else memoryview(key).nbytes
    if n != POLY1305_KEY:
        raise ValueError(f"A poly1305 key is {POLY1305_KEY} bytes long, got {n}")


#: Longest data or associated data an AEAD takes (as `cryptography`: OverflowError beyond it).
AEAD_MAX = 2**31 - 1


def aead_lengths(data: Any, aad: Any) -> None:
    """OverflowError for data or associated data longer than AEAD_MAX bytes."""
    items = aad if isinstance(aad, (tuple, list)) else (aad,)
    if len(data) > AEAD_MAX or any(a is not None and len(a) > AEAD_MAX for a in items):
        raise OverflowError("Data or associated data too long. Max 2**31 - 1 bytes")


def _byte_view(out: Any) -> bool:
    return (
        out.__class__ is memoryview and not out.readonly and out.format == "B" and out.c_contiguous
    )


def output_buffer(out: Any, length: int) -> None:
    """A buffer results are written into: a bytearray or a writable, contiguous byte memoryview
    with room for ``length`` bytes."""
    if out.__class__ is not bytearray and not _byte_view(out):
        raise TypeError(
            f"out must be a bytearray or a writable memoryview of bytes, got {type(out).__name__}"
        )
    if len(out) < length:
        raise ValueError(f"out must have room for {length} bytes, has {len(out)}")


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
            f"Data too long for nonce: CCM data of {data_len} bytes, {len(nonce)}-byte nonce "
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
    gmpy2 = gmp()
    in_subgroup = gmpy2.legendre(y, p) == 1 if p == 2 * q + 1 else gmpy2.powmod(y, q, p) == 1
    if not in_subgroup:
        raise ValueError(f"peer public value is not in the prime-order subgroup of {name}")


def rsa_padding(pad: Any) -> None:
    """PKCS1v15(), PSS(...) or OAEP(...); OAEP with the SHA-1/SHA-2 hashes OpenSSL takes."""
    if not isinstance(pad, padding.AsymmetricPadding):
        raise TypeError(f"padding must be PKCS1v15(), PSS(...) or OAEP(...), got {pad!r}")
    # As `cryptography`: another padding, or another mask generation function, is unsupported.
    if not isinstance(pad, (padding.PKCS1v15, padding.PSS, padding.OAEP)):
        raise UnsupportedAlgorithm(
            f"{getattr(pad, 'name', type(pad).__name__)} is not supported",
            _Reasons.UNSUPPORTED_PADDING,
        )
    if not isinstance(pad, padding.PKCS1v15) and not isinstance(
        pkcs1._private_attr(pad, "_mgf"), padding.MGF1
    ):
        raise UnsupportedAlgorithm(
            "only MGF1 is supported as mask generation function", _Reasons.UNSUPPORTED_MGF
        )
    if isinstance(pad, padding.OAEP):
        # OpenSSL takes OAEP with SHA-1/SHA-2 only; an engine padding in Python must not take more.
        for alg in pkcs1.oaep_params(pad)[:2]:
            if hash_name(alg) not in ("sha1", "sha224", "sha256", "sha384", "sha512"):
                raise UnsupportedAlgorithm(
                    f"OAEP takes SHA-1 or SHA-224/256/384/512, got {alg.name}",
                    _Reasons.UNSUPPORTED_PADDING,
                )


def rsa_signature_fits(pad: Any, hash_alg: Any, key_bits: int) -> None:
    """A PSS salt (resolved from its spec; AUTO is for verifying only) and the digest fit the
    key (RFC 8017 9.1.1 step 3): ValueError otherwise, as OpenSSL refuses them."""
    if isinstance(pad, padding.PSS):
        salt = pkcs1.salt_length_for(pad, hash_alg, key_bits)
        if -(-(key_bits - 1) // 8) < hash_alg.digest_size + salt + 2:
            raise ValueError(
                f"digest ({hash_alg.digest_size} bytes) and salt ({salt} bytes) too long for a "
                f"{key_bits}-bit key; use a larger key or a shorter salt"
            )


def rsa_message_fits(pad: Any, length: int, key_bits: int) -> None:
    """A message to encrypt fits the key with its padding (RFC 8017 7.1.1 step 1b, 7.2.1 step
    1): ValueError otherwise, as OpenSSL refuses it."""
    k = -(-key_bits // 8)
    if isinstance(pad, padding.OAEP):
        room = k - 2 * pkcs1.oaep_params(pad)[0].digest_size - 2
    else:
        room = k - 11
    if length > room:
        raise ValueError(
            f"message of {length} bytes too long to encrypt with a {key_bits}-bit key and this "
            f"padding (at most {max(room, 0)})"
        )


def rsa_ciphertext(data: Any, modulus: int) -> None:
    """A ciphertext to decrypt is k bytes (RFC 8017 7.1.2 step 1, 7.2.2 step 1) and, as a
    number, below n (5.1.2 step 1): ValueError otherwise, as OpenSSL refuses it."""
    k = -(-modulus.bit_length() // 8)
    if len(data) != k:
        raise ValueError(
            f"Ciphertext length must be equal to key size ({k} bytes), got {len(data)}"
        )
    if int.from_bytes(data, "big") >= modulus:
        raise ValueError("Decryption failed: the ciphertext is not below the modulus")


def digest_fits(digest: Any, hash_alg: Any) -> None:
    """A digest to sign or verify: bytes as long as ``hash_alg``'s output (one we offer)."""
    hash_name(hash_alg)
    byteslike("digest", digest)
    if len(digest) != hash_alg.digest_size:
        raise ValueError(
            f"prehashed data must be {hash_alg.digest_size} bytes for {hash_alg.name}, "
            f"got {len(digest)}"
        )


def int_value(name: str, value: Any) -> None:
    """TypeError unless ``value`` is an int (bool is not taken for one)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")


# -- the checks of each family/kind of ops.CONTRACT, run by the provider before any engine ------
# The common case of the bulk families costs a few comparisons (every chained Cipher update and
# every engine-path AEAD op passes here); the named checks above run only to word a failure.

#: Per cipher algorithm name: (mode, key sizes, block size, IV size or None), made on first use.
_CIPHERS: dict[str, tuple[str, tuple[int, ...], int, int | None]] = {}


@functools.cache
def _cipher_names() -> frozenset[str]:
    """Every name a CipherOp may carry (GCM is an AEAD's; SM4-GCM only streams in software)."""
    names = {f"aes-{b}-{m}" for b in (128, 192, 256) for m in ("ecb", "cbc", "ctr", "cfb")}
    names |= {f"aes-{b}-{m}" for b in (128, 192, 256) for m in ("cfb8", "ofb")}
    names |= {"aes-128-xts", "aes-256-xts"}
    for family, spec in CIPHER_FAMILIES.items():
        names |= {name for name in spec.names(family) if not name.endswith("-gcm")}
    return frozenset(names)


def _cipher_spec(alg: str) -> tuple[str, tuple[int, ...], int, int | None]:
    if alg not in _cipher_names():
        raise ValueError(f"{alg!r} is not a cipher algorithm (aes-128-cbc, sm4-ctr, chacha20...)")
    mode = alg.rsplit("-", 1)[-1]
    family = cipher_family(alg)
    if family is not None:  # Triple DES, Camellia, SM4, ChaCha20, the decrepit ones
        sizes = (int(alg.split("-")[1]) // 8,) if family.sized else family.key_sizes
        iv = family.iv if family.iv is not None else family.block
        spec = (mode, sizes, family.block, None if mode == "ecb" or family.block == 1 else iv)
    elif mode == "xts":  # two AES keys: aes-128-xts takes 32 bytes, aes-256-xts 64
        spec = (mode, (int(alg.split("-")[1]) // 4,), BLOCK, BLOCK)
    else:
        spec = (mode, (aes_key_bytes(alg),), BLOCK, None if mode == "ecb" else BLOCK)
    _CIPHERS[alg] = spec
    return spec


_BUFFERS = frozenset({bytes, bytearray, memoryview})


def _cipher_op(op: Any) -> None:
    key, data, iv = op.key, op.data, op.iv
    spec = _CIPHERS.get(op.alg) or _cipher_spec(op.alg)
    mode, key_sizes, block, iv_size = spec
    if key.__class__ is not bytes or len(key) not in key_sizes:
        cipher_key(op.alg, key, key_sizes)
    if data.__class__ is not bytes and data.__class__ not in _BUFFERS:
        byteslike("data", data)
    if iv_size is not None and (iv.__class__ is not bytes or len(iv) != iv_size):
        block_iv(mode, iv, iv_size)
    elif iv_size is None and iv is not None:
        raise ValueError(f"{op.alg} takes no IV")
    if mode == "chacha20":
        chacha20_room(iv, len(data))
    if len(data) % block and mode in ("ecb", "cbc"):
        block_aligned(mode, len(data), block)
    if mode == "xts":
        if len(data) < BLOCK:
            raise ValueError(f"XTS data must be at least 16 bytes, got {len(data)}")
        if op.kind == "encrypt":
            xts_keys(key)
    out = op.out
    if out is not None and (
        (out.__class__ is not bytearray and not _byte_view(out)) or len(out) < len(data)
    ):
        output_buffer(out, len(data))


#: AEADs other than GCM and CCM, by name: (key bytes, nonce lengths or None for no nonce,
#: what to call the nonce lengths in a message); their tags are 16 bytes.
_AEADS: dict[str, tuple[int, tuple[int, ...] | None, str]] = {
    "chacha20-poly1305": (32, (12,), "12"),
}
for _bits in (128, 192, 256):
    _AEADS[f"aes-{_bits}-ocb"] = (_bits // 8, (12, 13, 14, 15), "between 12 and 15")
    _AEADS[f"aes-{_bits}-gcm-siv"] = (_bits // 8, (12,), "12")
    _AEADS[f"aes-{_bits}-siv"] = (_bits // 4, None, "")


def aead_nonce(alg: str, nonce: Any) -> None:
    """The nonce of an AEAD of :data:`_AEADS`: its lengths; None for AES-SIV."""
    lengths, wording = _AEADS[alg][1:]
    if lengths is None:
        if nonce is not None:
            raise ValueError("AES-SIV takes its nonce as the last associated data item")
        return
    byteslike("nonce", nonce)
    if len(nonce) not in lengths:
        raise ValueError(f"Nonce must be {wording} bytes for {alg}, got {len(nonce)}")


def _other_aead(op: Any, payload: int) -> None:
    spec = _AEADS.get(op.alg)
    if spec is None:
        raise ValueError(f"unknown AEAD {op.alg!r}")
    key = op.key
    byteslike("key", key)
    if len(key) != spec[0]:
        raise ValueError(f"{op.alg} key must be {spec[0]} bytes, got {len(key)}")
    aead_nonce(op.alg, op.iv)
    if op.tag_length != 16:
        raise ValueError(f"{op.alg} tags are 16 bytes, got {op.tag_length}")
    if spec[1] is None:
        aad = op.aad
        if aad is not None:
            if aad.__class__ is not tuple:
                raise TypeError("AES-SIV associated data must be a tuple of bytes-like items")
            for item in aad:
                byteslike("associated_data", item)
            aead_lengths(b"", aad)
    if payload < 0:
        raise InvalidTag


_MAX = AEAD_MAX


def _aead_op(op: Any) -> None:
    key, iv, data, aad, tag_length = op.key, op.iv, op.data, op.aad, op.tag_length
    if data.__class__ is not bytes and data.__class__ not in _BUFFERS:
        byteslike("data", data)
    if aad is not None:
        if aad.__class__ not in _BUFFERS:
            if aad.__class__ is not tuple or _AEADS.get(op.alg, (0, 0))[1] is not None:
                byteslike("associated_data", aad)  # a tuple is AES-SIV's (checked there)
        elif len(aad) > _MAX:
            aead_lengths(data, aad)
    n = len(data)
    if n > _MAX:
        aead_lengths(data, aad)
    payload = n if op.kind == "encrypt" else n - tag_length
    code = op.alg[-3]
    if code not in "gc":  # not -gcm or -ccm: the AEADs added later
        _other_aead(op, payload)
        return
    if op.alg[0] == "s":  # sm4-gcm: a 16-byte SM4 key
        cipher_key(op.alg, key, (16,))
    elif key.__class__ is not bytes or len(key) != aes_key_bytes(op.alg):
        aes_key_for(op.alg, key)
    if code == "g":  # -gcm, not -ccm
        if iv.__class__ is not bytes or not 8 <= len(iv) <= 128:
            gcm_nonce(iv)
        if tag_length not in GCM_TAG_SIZES:
            gcm_tag_length(tag_length)
    else:
        if tag_length not in CCM_TAG_SIZES:
            ccm_tag_length(tag_length)
        ccm_nonce(iv, max(payload, 0))
    if payload < 0:
        raise InvalidTag  # shorter than a tag: it cannot be authentic


def _mac_op(op: Any) -> None:
    data, key = op.data, op.key
    if data.__class__ not in _BUFFERS:
        byteslike("data", data)
    kind = op.alg[:4]
    if kind == "hmac":
        if key.__class__ not in _BUFFERS:
            byteslike("key", key)
        return
    if kind == "poly":
        if key.__class__ is not bytes or len(key) != POLY1305_KEY:
            poly1305_key(key)
        return
    if op.alg == "cmac-3des":
        cipher_key(op.alg, key, (24,))
        return
    if key.__class__ is not bytes or len(key) != aes_key_bytes(op.alg):
        aes_key_for(op.alg, key)
    if kind == "gmac":
        iv = op.iv
        if iv.__class__ is not bytes or not 8 <= len(iv) <= 128:
            gcm_nonce(iv)
        if op.tag_length not in GCM_TAG_SIZES:
            gcm_tag_length(op.tag_length)


def _rsa_public_numbers(op: Any) -> Any:
    key = op.key
    public = key.public_key() if op.alg.endswith("-private") else key
    return public.public_numbers()


def _rsa_sign(op: Any) -> None:
    _rsa_verify_fields(op)
    rsa_signature_fits(op.padding, op.hash_alg, op.key.key_size)


def _rsa_verify_fields(op: Any) -> None:
    rsa_padding(op.padding)
    digest_fits(op.digest, op.hash_alg)


def _rsa_verify(op: Any) -> None:
    byteslike("signature", op.signature)
    _rsa_verify_fields(op)


def _rsa_crypt(op: Any) -> None:
    byteslike("data", op.data)
    rsa_padding(op.padding)
    if op.kind == "encrypt":
        rsa_message_fits(op.padding, len(op.data), op.key.key_size)
    else:
        rsa_ciphertext(op.data, _rsa_public_numbers(op).n)


def _rsa_raw(op: Any) -> None:
    int_value("value", op.value)
    rsa_input(op.value, _rsa_public_numbers(op).n)


def _ecdsa_sign(op: Any) -> None:
    digest_fits(op.digest, op.hash_alg)
    if op.deterministic.__class__ is not bool:
        raise TypeError(f"deterministic must be a bool, got {op.deterministic!r}")


def _ecdsa_verify(op: Any) -> None:
    byteslike("signature", op.signature)
    digest_fits(op.digest, op.hash_alg)


def _ecdh_op(op: Any) -> None:
    from cryptoffload.blocks.curves import by_cryptography

    if op.peer.curve.name != op.key.curve.name:
        raise ValueError(
            f"peer public key is on {op.peer.curve.name}, expected {op.key.curve.name}"
        )
    numbers = op.peer.public_numbers()
    ec_public_point(by_cryptography(op.key.curve), numbers.x, numbers.y)


def ffc_same_group(own: Any, peer: Any) -> None:
    """ValueError unless two FFDH groups (``p``, ``g`` attributes) are the same."""
    if peer.p != own.p or peer.g != own.g:
        raise ValueError("peer public key belongs to another DH group")


def ffc_peer(params: Any, peer: Any) -> None:
    """SP 800-56A 5.6.2.3.1 for a peer's value in a group (``blocks.ffdh.Params``): always
    2 <= y <= p - 2; y^q = 1 mod p when the group's q is known (given, or an RFC 7919 group)."""
    q = params.subgroup_order
    if q is None:
        # As OpenSSL: without q there is no subgroup to check membership of, only the range.
        if not 2 <= peer.y <= params.p - 2:
            raise ValueError("peer public value is out of range 2 <= y <= p - 2")
        return
    ffc_public_value(params.p, q, peer.y, f"the {params.bits}-bit group")


def _dh_op(op: Any) -> None:
    own, peer = op.key.params, op.peer.params
    ffc_same_group(own, peer)
    ffc_peer(own, op.peer)


def _rng_op(op: Any) -> None:
    if not isinstance(op.length, int) or op.length < 0:
        raise ValueError(f"seed length must be a non-negative int, got {op.length!r}")


def _hash_op(op: Any) -> None:
    if op.data.__class__ not in _BUFFERS:
        byteslike("data", op.data)
    length = op.length
    if (length is not None or op.alg in XOF_NAMES) and (
        not isinstance(length, int) or length <= 0 or op.alg not in XOF_NAMES
    ):
        raise ValueError(f"{op.alg}: length is the output size of a SHAKE (an int > 0) only")


def _eddsa_sign(op: Any) -> None:
    byteslike("data", op.data)


def _eddsa_verify(op: Any) -> None:
    byteslike("signature", op.signature)
    byteslike("data", op.data)


def _xdh_op(op: Any) -> None:
    # X25519 and X448 keys of cryptography are distinct types: a peer of the other curve
    # cannot pass for ours.
    if type(op.peer) is not type(op.key.public_key()):
        raise TypeError(f"peer public key is not an {op.alg.upper()} public key")


def _dsa_sign(op: Any) -> None:
    digest_fits(op.digest, op.hash_alg)


# -- password KDFs, key wrap, ML-KEM, ML-DSA: `cryptography`'s checks and messages ------------


def pbkdf2_params(iterations: int) -> None:
    """PBKDF2 runs its HMAC at least once."""
    if iterations < 1:
        raise ValueError("iterations must be greater than or equal to 1.")


def scrypt_params(n: int, r: int, p: int) -> None:
    """scrypt's cost: n a power of 2 above 1, r and p at least 1 (RFC 7914)."""
    if n < 2 or n & (n - 1):
        raise ValueError("n must be greater than 1 and be a power of 2.")
    if r < 1:
        raise ValueError("r must be greater than or equal to 1.")
    if p < 1:
        raise ValueError("p must be greater than or equal to 1.")


def argon2_params(salt: bytes, length: int, iterations: int, lanes: int, memory: int) -> None:
    """Argon2's limits (RFC 9106 3.1): an 8-byte salt, a 4-byte tag, 8 KiB a lane."""
    if len(salt) < 8:
        raise ValueError("salt must be at least 8 bytes")
    if length < 4:
        raise ValueError("length must be greater than or equal to 4.")
    if iterations < 1:
        raise ValueError("iterations must be greater than or equal to 1.")
    if lanes < 1:
        raise ValueError("lanes must be greater than or equal to 1.")
    if memory // 8 < lanes:
        raise ValueError("memory_cost must be an integer >= 8 * lanes.")


#: Cost parameters each KDF takes (PBKDF2's names go on with the hash: ``pbkdf2-hmac-<hash>``).
_KDF_PARAMS = {"pbkdf2": 1, **dict.fromkeys(KDF_NAMES, 3)}


def _kdf_op(op: Any) -> None:
    alg = op.alg
    stem = "pbkdf2" if alg.startswith("pbkdf2-hmac-") else alg
    hash_ok = stem != "pbkdf2" or (alg[12:] in HASH_NAMES and alg[12:] not in XOF_NAMES)
    if stem not in _KDF_PARAMS or not hash_ok:
        raise ValueError(f"{alg!r} is not a KDF (pbkdf2-hmac-sha256, scrypt, argon2id...)")
    byteslike("key_material", op.key)
    if op.salt.__class__ is not bytes:
        raise TypeError(f"salt must be bytes, got {type(op.salt).__name__}")
    int_value("length", op.length)
    params = op.params
    if params.__class__ is not tuple or len(params) != _KDF_PARAMS[stem]:
        raise ValueError(f"{alg} takes {_KDF_PARAMS[stem]} cost parameters, got {params!r}")
    for value in (op.length, *params):
        int_value("a KDF parameter", value)
        if value < 0:
            raise ValueError("KDF parameters are not negative")
    if stem == "pbkdf2":
        pbkdf2_params(*params)
    elif stem == "scrypt":
        scrypt_params(*params)
    else:
        argon2_params(op.salt, op.length, *params)
    for name in ("aad", "secret"):
        value = getattr(op, name)
        if value is not None and (not stem.startswith("argon2") or value.__class__ is not bytes):
            raise TypeError(f"{name} is bytes or None, and Argon2's only")


def wrapping_key(key: Any) -> None:
    """A key-wrap key: an AES key, 16, 24 or 32 bytes."""
    byteslike("wrapping_key", key)
    if len(key) not in AES_KEY_SIZES:
        raise ValueError("The wrapping key must be a valid AES key length")


def key_to_wrap(data: Any, padded: bool) -> None:
    """RFC 3394 wraps whole 8-byte blocks, two or more; RFC 5649 1 to 2**32 - 1 bytes."""
    byteslike("key_to_wrap", data)
    n = len(data)
    if padded:
        if not 0 < n < 1 << 32:
            raise ValueError("key_to_wrap must be between 1 and 2^32 bytes")
        return
    if n < 16:
        raise ValueError("The key to wrap must be at least 16 bytes")
    if n % 8:
        raise ValueError("The key to wrap must be a multiple of 8 bytes")


def wrapped_key(data: Any, padded: bool) -> None:
    """A wrapped key is whole 8-byte blocks: 3 or more (RFC 3394), 2 or more (RFC 5649);
    InvalidUnwrap otherwise, as `cryptography` answers."""
    byteslike("wrapped_key", data)
    least = 16 if padded else 24
    if len(data) < least:
        raise InvalidUnwrap(f"Must be at least {least} bytes")
    if len(data) % 8:
        raise InvalidUnwrap("The wrapped key must be a multiple of 8 bytes")


def _keywrap_op(op: Any) -> None:
    alg = op.alg
    padded = alg.endswith("-keywrap-pad")
    if not (padded or alg.endswith("-keywrap")) or not alg.startswith("aes-"):
        raise ValueError(f"{alg!r} is not a key wrap (aes-128-keywrap, aes-256-keywrap-pad...)")
    if op.kind == "wrap":
        wrapping_key(op.key)
        key_to_wrap(op.data, padded)
    else:
        wrapped_key(op.data, padded)
        wrapping_key(op.key)
    want = aes_key_bytes(alg)
    if len(op.key) != want:
        raise ValueError(f"{alg} takes a {want}-byte key, got {len(op.key)}")


#: Bytes of an ML-KEM ciphertext, by parameter set (FIPS 203 table 3).
MLKEM_CIPHERTEXT = {768: 1088, 1024: 1568}


#: The last part of an ML-KEM or ML-DSA name, by kind.
_PQ_SUFFIX = {"encapsulate": "encap", "decapsulate": "decap", "sign": "sign", "verify": "verify"}


@functools.cache
def _post_quantum_class(family: str, size: int, side: str) -> type:
    """`cryptography`'s key class of an ML-KEM or ML-DSA parameter set (imported on first use:
    only where `cryptography` has the module)."""
    from importlib import import_module

    module = import_module(f"cryptography.hazmat.primitives.asymmetric.{family}")
    return getattr(module, f"{family.upper()}{size}{side}Key")


def _post_quantum_key(op: Any, family: str, sizes: tuple[int, ...], private: bool) -> int:
    """The parameter set ``op.alg`` names, its key checked against it (a `cryptography` key)."""
    parts = op.alg.split("-")
    size = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0
    if parts[0] != family or size not in sizes:
        raise ValueError(f"{op.alg!r} is not an {family.upper()} algorithm name")
    if _PQ_SUFFIX[op.kind] != parts[2]:  # counted under the name: it must say what was done
        raise ValueError(f"a {op.kind} op is named {family}-{size}-{_PQ_SUFFIX[op.kind]}")
    cls = _post_quantum_class(family, size, "Private" if private else "Public")
    if not isinstance(op.key, cls):
        raise TypeError(f"{op.alg} needs an {cls.__name__}, got {type(op.key).__name__}")
    return size


def _mlkem_op(op: Any) -> None:
    size = _post_quantum_key(op, "mlkem", MLKEM_SIZES, op.kind == "decapsulate")
    if op.kind == "decapsulate":
        byteslike("ciphertext", op.data)
        if len(op.data) != MLKEM_CIPHERTEXT[size]:
            raise ValueError(f"Invalid ML-KEM-{size} ciphertext")


def mldsa_context(context: Any) -> None:
    """An ML-DSA context string: at most 255 bytes (FIPS 204 5.2)."""
    if context is not None:
        byteslike("context", context)
        if len(context) > 255:
            raise ValueError("Context must be at most 255 bytes")


def mldsa_mu(mu: Any) -> None:
    """An ML-DSA message representative: 64 bytes."""
    byteslike("mu", mu)
    if len(mu) != 64:
        raise ValueError("mu must be 64 bytes")


def _mldsa_op(op: Any) -> None:
    _post_quantum_key(op, "mldsa", MLDSA_SIZES, op.kind == "sign")
    if op.data is not None and op.digest is not None:
        raise ValueError("an ML-DSA op signs or verifies one of data (a message), digest (mu)")
    if op.kind == "verify":
        byteslike("signature", op.signature)
    if op.digest is not None:
        if op.context is not None:
            raise ValueError("mu already holds the context: an op with digest has none")
        mldsa_mu(op.digest)
    else:
        byteslike("data", op.data)
        mldsa_context(op.context)


#: The check of every family/kind of ops.CONTRACT (a test keeps the two tables in step).
OP_CHECKS: dict[str, dict[str, Callable[[Any], None]]] = {
    "cipher": {"encrypt": _cipher_op, "decrypt": _cipher_op},
    "aead": {"encrypt": _aead_op, "decrypt": _aead_op},
    "hash": {"digest": _hash_op},
    "mac": {"mac": _mac_op},
    "rsa": {
        "sign": _rsa_sign,
        "verify": _rsa_verify,
        "encrypt": _rsa_crypt,
        "decrypt": _rsa_crypt,
        "raw": _rsa_raw,
    },
    "ecdsa": {"sign": _ecdsa_sign, "verify": _ecdsa_verify},
    "ecdh": {"exchange": _ecdh_op},
    "dh": {"exchange": _dh_op},
    "rng": {"seed": _rng_op},
    "eddsa": {"sign": _eddsa_sign, "verify": _eddsa_verify},
    "xdh": {"exchange": _xdh_op},
    "dsa": {"sign": _dsa_sign, "verify": _ecdsa_verify},
    "kdf": {"derive": _kdf_op},
    "keywrap": {"wrap": _keywrap_op, "unwrap": _keywrap_op},
    "mlkem": {"encapsulate": _mlkem_op, "decapsulate": _mlkem_op},
    "mldsa": {"sign": _mldsa_op, "verify": _mldsa_op},
}


def validate_op(op: Any) -> None:
    """Every check that applies to ``op``, before any engine sees it; ValueError for a
    family/kind that ops.CONTRACT does not list."""
    try:
        check = OP_CHECKS[op.family][op.kind]
    except KeyError:
        raise ValueError(
            f"unknown operation {op.family!r}/{op.kind!r}; ops.CONTRACT lists the ones there are"
        ) from None
    check(op)
