"""Which algorithm names a token's mechanisms could carry, with the mechanism behind each."""

from __future__ import annotations

from dataclasses import dataclass

from cryptoffload.core.names import RSA_SIZES
from cryptoffload.engines.pkcs11 import ck

CKF_ENCRYPT = 0x100
CKF_DECRYPT = 0x200
CKF_DIGEST = 0x400
CKF_SIGN = 0x800
CKF_VERIFY = 0x2000
CKF_DERIVE = 0x80000

HASHES = {
    "sha1": (ck.CKM_SHA_1, 20),
    "sha224": (ck.CKM_SHA224, 28),
    "sha256": (ck.CKM_SHA256, 32),
    "sha384": (ck.CKM_SHA384, 48),
    "sha512": (ck.CKM_SHA512, 64),
}
HMACS = {
    "hmac-sha1": (ck.CKM_SHA_1_HMAC, 20, 64),
    "hmac-sha224": (ck.CKM_SHA224_HMAC, 28, 64),
    "hmac-sha256": (ck.CKM_SHA256_HMAC, 32, 64),
    "hmac-sha384": (ck.CKM_SHA384_HMAC, 48, 128),
    "hmac-sha512": (ck.CKM_SHA512_HMAC, 64, 128),
}
AES_MODES = {
    "gcm": ck.CKM_AES_GCM,
    "cbc": ck.CKM_AES_CBC,
    "ecb": ck.CKM_AES_ECB,
    "ctr": ck.CKM_AES_CTR,
}
CURVES = ("p256", "p384", "p521")
CURVE_BITS = {"p256": 256, "p384": 384, "p521": 521}


@dataclass(frozen=True)
class Claim:
    """An algorithm the token's mechanism list offers: the mechanism, and the key-size range
    the token reports for it (units as the token gives them)."""

    mechanism: int
    min_key: int
    max_key: int


def _has(info: ck.MechanismInfo | None, flags: int) -> bool:
    return info is not None and info.flags & flags == flags


def _in(info: ck.MechanismInfo, size: int, alt: int | None = None) -> bool:
    """Key size in the reported range (in bytes, or in bits where the module uses them)."""
    lo, hi = int(info.ulMinKeySize), int(info.ulMaxKeySize)
    return lo <= size <= hi or (alt is not None and lo <= alt <= hi)


def offered(mechs: dict[int, ck.MechanismInfo]) -> dict[str, Claim]:
    """Algorithm name -> Claim, for what the mechanism list says the token does (before any
    known-answer check)."""
    out: dict[str, Claim] = {}

    def claim(name: str, mech: int) -> None:
        info = mechs[mech]
        out[name] = Claim(mech, int(info.ulMinKeySize), int(info.ulMaxKeySize))

    for name, (mech, _) in HASHES.items():
        if _has(mechs.get(mech), CKF_DIGEST):
            claim(name, mech)
    for name, (mech, _, _) in HMACS.items():
        if _has(mechs.get(mech), CKF_SIGN):
            claim(name, mech)
    for mode, mech in AES_MODES.items():
        info = mechs.get(mech)
        if _has(info, CKF_ENCRYPT | CKF_DECRYPT):
            for nbytes in (16, 24, 32):
                if _in(info, nbytes, nbytes * 8):  # type: ignore[arg-type]
                    claim(f"aes-{nbytes * 8}-{mode}", mech)
    cmac = mechs.get(ck.CKM_AES_CMAC)
    if _has(cmac, CKF_SIGN):
        for nbytes in (16, 24, 32):
            if _in(cmac, nbytes, nbytes * 8):  # type: ignore[arg-type]
                claim(f"cmac-aes-{nbytes * 8}", ck.CKM_AES_CMAC)
    ecdsa = mechs.get(ck.CKM_ECDSA)
    for curve in CURVES:
        bits = CURVE_BITS[curve]
        if _has(ecdsa, CKF_SIGN) and _in(ecdsa, bits):  # type: ignore[arg-type]
            claim(f"ecdsa-{curve}-sign", ck.CKM_ECDSA)
        if _has(ecdsa, CKF_VERIFY) and _in(ecdsa, bits):  # type: ignore[arg-type]
            claim(f"ecdsa-{curve}-verify", ck.CKM_ECDSA)
        ecdh = mechs.get(ck.CKM_ECDH1_DERIVE)
        if _has(ecdh, CKF_DERIVE) and _in(ecdh, bits):  # type: ignore[arg-type]
            claim(f"ecdh-{curve}", ck.CKM_ECDH1_DERIVE)
    rsa = mechs.get(ck.CKM_RSA_PKCS)
    if _has(rsa, CKF_SIGN):
        for bits in RSA_SIZES:
            if _in(rsa, bits):  # type: ignore[arg-type]
                claim(f"rsa-{bits}-private", ck.CKM_RSA_PKCS)
    return out


def describe(mechs: dict[int, ck.MechanismInfo]) -> dict[str, str]:
    """The mechanism list for ``cryptoffload engines``: hex id -> key range and flags."""
    return {
        f"0x{m:x}": f"keys {i.ulMinKeySize}-{i.ulMaxKeySize} flags 0x{i.flags:x}"
        for m, i in sorted(mechs.items())
    }
