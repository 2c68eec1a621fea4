"""Translation at the token's edge: signatures, DigestInfo, PSS salts, curve parameters, points."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from cryptoffload.engines.pkcs11 import ck

#: RFC 8017's DigestInfo prefixes (the DER before the digest) for PKCS#1 v1.5 signatures.
DIGEST_INFO: dict[str, bytes] = {
    "sha1": bytes.fromhex("3021300906052b0e03021a05000414"),
    "sha224": bytes.fromhex("302d300d06096086480165030402040500041c"),
    "sha256": bytes.fromhex("3031300d060960864801650304020105000420"),
    "sha384": bytes.fromhex("3041300d060960864801650304020205000430"),
    "sha512": bytes.fromhex("3051300d060960864801650304020305000440"),
}
#: The hash mechanism and MGF1 generator of each hash, for PSS and OAEP parameters.
HASH_MECH = {
    "sha1": (ck.CKM_SHA_1, ck.CKG_MGF1_SHA1),
    "sha224": (ck.CKM_SHA224, ck.CKG_MGF1_SHA224),
    "sha256": (ck.CKM_SHA256, ck.CKG_MGF1_SHA256),
    "sha384": (ck.CKM_SHA384, ck.CKG_MGF1_SHA384),
    "sha512": (ck.CKM_SHA512, ck.CKG_MGF1_SHA512),
}
#: DER OIDs of the named curves (CKA_EC_PARAMS), by our curve name.
CURVE_OID = {
    "p256": bytes.fromhex("06082a8648ce3d030107"),
    "p384": bytes.fromhex("06052b81040022"),
    "p521": bytes.fromhex("06052b81040023"),
}
CURVE_OF_OID = {v: k for k, v in CURVE_OID.items()}
CURVE_CLASS = {"p256": ec.SECP256R1, "p384": ec.SECP384R1, "p521": ec.SECP521R1}
CURVE_BYTES = {"p256": 32, "p384": 48, "p521": 66}


def rs_to_der(raw: bytes) -> bytes:
    """The token's r‖s (two equal halves) as the DER signature `cryptography` gives."""
    half = len(raw) // 2
    return encode_dss_signature(
        int.from_bytes(raw[:half], "big"), int.from_bytes(raw[half:], "big")
    )


def der_to_rs(der: bytes, size: int) -> bytes | None:
    """A DER signature as r‖s of ``size`` bytes each; None when it is not one that fits (then
    it cannot hold)."""
    try:
        r, s = decode_dss_signature(der)
    except ValueError:
        return None
    if encode_dss_signature(r, s) != bytes(der):  # only the strict DER OpenSSL accepts
        return None
    if not (0 < r < 1 << (8 * size) and 0 < s < 1 << (8 * size)):
        return None
    return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def der_octet_string(data: bytes) -> bytes:
    """``data`` as a DER OCTET STRING (CKA_EC_POINT's form)."""
    n = len(data)
    if n < 0x80:
        head = bytes([n])
    elif n < 0x100:
        head = bytes([0x81, n])
    else:
        head = bytes([0x82, n >> 8, n & 0xFF])
    return b"\x04" + head + data


def der_octet_string_content(data: bytes) -> bytes:
    """The content of a DER OCTET STRING (the point inside CKA_EC_POINT)."""
    if len(data) < 2 or data[0] != 0x04:
        raise ValueError("not an OCTET STRING")
    n = data[1]
    if n < 0x80:
        return data[2 : 2 + n]
    k = n & 0x7F
    length = int.from_bytes(data[2 : 2 + k], "big")
    return data[2 + k : 2 + k + length]


def ec_point(public_key: Any) -> bytes:
    """An EC public key's uncompressed point (what ECDH1_DERIVE takes as the peer)."""
    return public_key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)


def pss_salt(pad: padding.PSS, hash_alg: hashes.HashAlgorithm, key_bits: int) -> int | None:
    """The salt length a PSS padding object means for this key and hash, or None when it is
    one the token cannot be told (AUTO, which only verifying can use)."""
    salt = pad._salt_length
    em_len = (key_bits - 1 + 7) // 8
    if isinstance(salt, int):
        return salt
    if isinstance(salt, padding._MaxLength):
        return em_len - hash_alg.digest_size - 2
    if isinstance(salt, padding._DigestLength):
        return hash_alg.digest_size
    return None
