"""A small fixed workload per algorithm: reproducible operations `verify` runs on engines."""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding as c_padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa

from cryptoffload import dh
from cryptoffload.blocks.curves import CRYPTOGRAPHY_CLASSES, CURVES
from cryptoffload.core.names import FFDHE_NAMES, HASH_NAMES, RSA_SIZES, cipher_family
from cryptoffload.core.ops import AeadOp, CipherOp, EcdhOp, EcdsaOp, HashOp, MacOp, Op, RngOp, RsaOp
from cryptoffload.core.provider import Provider, using
from cryptoffload.engines.software import SoftwareEngine

#: Payload sizes of the bulk algorithms' operations: whole AES blocks, 16 B to 16 KiB.
SIZES = (16, 64, 256, 1024, 4096, 16384)
_TAG = 16
_SHA256 = c_hashes.SHA256()
#: Modes with a workload; OCB3 and GCM-SIV take 12-byte nonces as GCM does (SIV has none).
_AEAD_MODES = ("gcm", "ccm", "ocb", "gcm-siv")
_CIPHER_MODES = ("ecb", "cbc", "ctr", "cfb", "ofb", "cfb8")
_RSA_NAMES = frozenset(f"rsa-{bits}-{side}" for bits in RSA_SIZES for side in ("private", "public"))


@dataclass(frozen=True)
class Item:
    """One operation of a workload: the Op (or, where the key type is the API's own, the call
    that makes it), and what it is in words (``encrypt 1024 B``)."""

    op: Op | None
    label: str
    index: int = 0
    seed: int = 0
    call: Callable[[Provider], Any] | None = None

    def run(self, provider: Provider) -> Any:
        """Perform the operation through ``provider``; its answer or its exception."""
        if self.op is not None:
            return provider.run(self.op)
        assert self.call is not None
        return self.call(provider)

    def describe(self) -> dict[str, Any]:
        """The input, enough to find it again (``build(alg, seed)[index]``), never the key:
        the size and the first bytes of data, IV, AAD, digest or signature in hex."""
        out: dict[str, Any] = {
            "item": self.index,
            "seed": self.seed,
            "label": self.label,
            "size": self.op.size if self.op is not None else 0,
        }
        for name in ("iv", "aad", "data", "digest", "signature"):
            value = getattr(self.op, name, None)
            if isinstance(value, (bytes, bytearray, memoryview)) and len(value):
                raw = bytes(value)
                out[name] = raw[:32].hex() + ("..." if len(raw) > 32 else "")
        return out


def supported(alg: str) -> bool:
    """Whether there is a workload for ``alg``."""
    try:
        _family(alg)
    except KeyError:
        return False
    return True


def _keyed(alg: str) -> tuple[str, int, int | None] | None:
    """(family, key bytes, IV or nonce bytes) of a cipher, AEAD or CMAC/GMAC name."""
    if alg == "chacha20-poly1305":
        return "aead", 32, 12
    if alg == "cmac-3des":
        return "mac", 24, None
    found = re.fullmatch(r"(gmac-|cmac-)?aes-(128|192|256)(?:-(\w+(?:-siv)?))?", alg)
    if found is not None:
        mac, bits, mode = found.group(1), int(found.group(2)), found.group(3)
        if mac and mode is None:
            return "mac", bits // 8, 12 if mac == "gmac-" else None
        if mode in _AEAD_MODES:
            return "aead", bits // 8, 12
        if mode in _CIPHER_MODES or (mode == "xts" and bits != 192):
            return "cipher", bits // (4 if mode == "xts" else 8), None if mode == "ecb" else 16
        return None
    family = cipher_family(alg)
    if family is not None and not alg.endswith("-gcm"):  # SM4-GCM: only as a stream
        if family.sized:
            key = int(alg.split("-")[1]) // 8
        else:
            key = 16 if 16 in family.key_sizes else family.key_sizes[-1]
        no_iv = alg.endswith("-ecb") or family.block == 1
        return "cipher", key, None if no_iv else (family.iv or family.block)
    return None


def _family(alg: str) -> str:
    keyed = _keyed(alg)
    if keyed is not None:
        return keyed[0]
    parts = alg.split("-")
    if alg in HASH_NAMES and not alg.startswith("shake"):  # a XOF's length is a parameter
        return "hash"
    if (alg.startswith("hmac-") and alg[5:] in HASH_NAMES) or alg == "poly1305":
        return "mac"
    if alg in _RSA_NAMES:
        return "rsa"
    if parts[0] == "ecdsa" and len(parts) == 3 and parts[1] in CURVES:
        return "ecdsa"
    if parts[0] == "ecdh" and len(parts) == 2 and parts[1] in CURVES:
        return "ecdh"
    if alg in FFDHE_NAMES:
        return "dh"
    if alg == "drbg":
        return "rng"
    raise KeyError(alg)


def build(alg: str, seed: int = 0) -> list[Item]:
    """The operations of ``alg``'s workload, the same for the same ``seed``; KeyError for an
    algorithm it does not know. Decryptions and verifications get inputs software made, and
    one of each is altered (a tag, a signature) so that the check that refuses it is tried."""
    family = _family(alg)
    rnd = random.Random(f"{alg}/{seed}")
    made = _BUILDERS[family](alg, rnd)
    return [
        Item(None, label, i, seed, call=op) if callable(op) else Item(op, label, i, seed)
        for i, (op, label) in enumerate(made)
    ]


def _key_and_iv(alg: str) -> tuple[int, int | None]:
    keyed = _keyed(alg)
    assert keyed is not None
    return keyed[1], keyed[2]


def _cipher(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    key_len, iv_len = _key_and_iv(alg)
    key = rnd.randbytes(key_len)
    if alg.endswith("-xts"):  # the two halves must differ
        key = key[: key_len // 2] + bytes(b ^ 0xFF for b in key[key_len // 2 :])
    out = []
    for size in SIZES:
        for kind in ("encrypt", "decrypt"):
            iv = rnd.randbytes(iv_len) if iv_len else None
            if alg == "chacha20":  # from block 0: a drawn counter could run past its last block
                iv = bytes(4) + iv[4:]
            out.append((CipherOp(alg, kind, key, iv, rnd.randbytes(size)), f"{kind} {size} B"))
    return out


def _aead(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    key = rnd.randbytes(_key_and_iv(alg)[0])
    software = SoftwareEngine()
    out: list[tuple[Op, str]] = []
    sealed = b""
    for size in SIZES:
        nonce, aad, data = rnd.randbytes(12), rnd.randbytes(16), rnd.randbytes(size)
        out.append((AeadOp(alg, "encrypt", key, nonce, data, aad, _TAG), f"encrypt {size} B"))
        sealed = software.run(AeadOp(alg, "encrypt", key, nonce, data, aad, _TAG))
        out.append((AeadOp(alg, "decrypt", key, nonce, sealed, aad, _TAG), f"decrypt {size} B"))
    altered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    out.append((AeadOp(alg, "decrypt", key, nonce, altered, aad, _TAG), "decrypt, altered tag"))
    return out


def _mac(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    gmac = alg.startswith("gmac-")
    key = rnd.randbytes(_key_and_iv(alg)[0] if alg[:5] in ("gmac-", "cmac-") else 32)
    out: list[tuple[Op, str]] = []
    for size in SIZES:
        data = rnd.randbytes(size)
        if gmac:
            op = MacOp(alg, "mac", key, data, iv=rnd.randbytes(12), tag_length=_TAG)
        else:
            op = MacOp(alg, "mac", key, data)
        out.append((op, f"mac {size} B"))
    return out


def _hash(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    return [(HashOp(alg, "digest", rnd.randbytes(size)), f"digest {size} B") for size in SIZES]


@functools.cache
def rsa_key(bits: int) -> c_rsa.RSAPrivateKey:
    """The workload's RSA key of ``bits`` (made once per process)."""
    return c_rsa.generate_private_key(65537, bits)


@functools.cache
def ec_key(curve: str, which: int) -> c_ec.EllipticCurvePrivateKey:
    """Key number ``which`` on ``curve`` (our short name, e.g. p256), made once per process."""
    return c_ec.generate_private_key(CRYPTOGRAPHY_CLASSES[CURVES[curve].openssl_name]())


@functools.cache
def dh_key(group: str, which: int) -> Any:
    """Key number ``which`` in the FFDHE ``group`` (the API's key, bound to no provider)."""
    return dh.generate_private_key(group)


def private_of(public: Any) -> Any:
    """The workload's private key behind ``public`` (one of its RSA keys), or None."""
    bits = getattr(public, "key_size", None)
    if not isinstance(public, c_rsa.RSAPublicKey) or bits not in RSA_SIZES:
        return None
    key = rsa_key(bits)
    return key if key.public_key().public_numbers() == public.public_numbers() else None


def _digest(rnd: random.Random) -> bytes:
    return hashlib.sha256(rnd.randbytes(64)).digest()


def _rsa(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    bits = int(alg.split("-")[1])
    key = rsa_key(bits)
    pub = key.public_key()
    v15 = c_padding.PKCS1v15()
    pss = c_padding.PSS(c_padding.MGF1(_SHA256), 32)
    oaep = c_padding.OAEP(c_padding.MGF1(_SHA256), _SHA256, None)
    digest, message = _digest(rnd), rnd.randbytes(32)
    value = rnd.randrange(2, pub.public_numbers().n - 1)
    if alg.endswith("-private"):
        sealed = pub.encrypt(message, oaep)
        return [
            (RsaOp(alg, "sign", key, digest=digest, padding=v15, hash_alg=_SHA256), "sign v1.5"),
            (RsaOp(alg, "sign", key, digest=digest, padding=pss, hash_alg=_SHA256), "sign PSS"),
            (RsaOp(alg, "decrypt", key, data=sealed, padding=oaep), "decrypt OAEP"),
            (RsaOp(alg, "raw", key, value=value), "raw"),
        ]
    sig = SoftwareEngine().run(
        RsaOp(alg, "sign", key, digest=digest, padding=v15, hash_alg=_SHA256)
    )
    bad = sig[:-1] + bytes([sig[-1] ^ 1])
    return [
        (
            RsaOp(alg, "verify", pub, digest=digest, signature=sig, padding=v15, hash_alg=_SHA256),
            "verify v1.5",
        ),
        (
            RsaOp(alg, "verify", pub, digest=digest, signature=bad, padding=v15, hash_alg=_SHA256),
            "verify, altered signature",
        ),
        (RsaOp(alg, "encrypt", pub, data=message, padding=oaep), "encrypt OAEP"),
        (RsaOp(alg, "raw", pub, value=value), "raw"),
    ]


def _ecdsa(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    curve = alg.split("-")[1]
    key = ec_key(curve, 0)
    if alg.endswith("-sign"):
        return [
            (EcdsaOp(alg, "sign", key, _digest(rnd), _SHA256, deterministic=False), "sign")
            for _ in range(2)
        ]
    digest = _digest(rnd)
    sig = SoftwareEngine().run(
        EcdsaOp(alg.replace("-verify", "-sign"), "sign", key, digest, _SHA256, deterministic=False)
    )
    other = _digest(rnd)
    pub = key.public_key()
    return [
        (EcdsaOp(alg, "verify", pub, digest, _SHA256, signature=sig), "verify"),
        (EcdsaOp(alg, "verify", pub, other, _SHA256, signature=sig), "verify, other digest"),
    ]


def _ecdh(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    curve = alg.split("-")[1]
    key = ec_key(curve, 0)
    return [
        (EcdhOp(alg, "exchange", key, ec_key(curve, n).public_key()), f"exchange, peer {n}")
        for n in (1, 2)
    ]


def _dh(alg: str, rnd: random.Random) -> list[tuple[Any, str]]:
    mine, peer = dh_key(alg, 0), dh_key(alg, 1).public_key()

    def exchange(provider: Provider) -> bytes:
        with using(provider):  # the key follows the provider in force
            return mine.exchange(peer)

    return [(exchange, "exchange")]


def _rng(alg: str, rnd: random.Random) -> list[tuple[Op, str]]:
    return [(RngOp(alg, "seed", 48), "seed 48 B") for _ in range(2)]


_BUILDERS = {
    "cipher": _cipher,
    "aead": _aead,
    "mac": _mac,
    "hash": _hash,
    "rsa": _rsa,
    "ecdsa": _ecdsa,
    "ecdh": _ecdh,
    "dh": _dh,
    "rng": _rng,
}
