"""PKCS #8 encryption with PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC), for keys `cryptography`
does not serialize itself (finite-field DH)."""

from __future__ import annotations

import os

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from cryptoffload.blocks import der

OID_PBES2 = "1.2.840.113549.1.5.13"
OID_PBKDF2 = "1.2.840.113549.1.5.12"
OID_HMAC_SHA256 = "1.2.840.113549.2.9"
OID_AES256_CBC = "2.16.840.1.101.3.4.1.42"
#: OIDs of the PRFs and ciphers :func:`decrypt` takes.
_PRFS = {
    "1.2.840.113549.2.7": hashes.SHA1,
    "1.2.840.113549.2.8": hashes.SHA224,
    OID_HMAC_SHA256: hashes.SHA256,
    "1.2.840.113549.2.10": hashes.SHA384,
    "1.2.840.113549.2.11": hashes.SHA512,
}
_AES = {"2.16.840.1.101.3.4.1.2": 16, "2.16.840.1.101.3.4.1.22": 24, OID_AES256_CBC: 32}
ITERATIONS = 600_000  # OWASP's 2023 figure for PBKDF2-HMAC-SHA256


def encrypt(plain: bytes, password: bytes) -> bytes:
    """EncryptedPrivateKeyInfo DER of a PrivateKeyInfo DER."""
    salt, iv = os.urandom(16), os.urandom(16)
    key = PBKDF2HMAC(hashes.SHA256(), 32, salt, ITERATIONS).derive(password)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain) + padder.finalize()
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    sealed = enc.update(padded) + enc.finalize()
    kdf = der.sequence(
        der.oid(OID_PBKDF2),
        der.sequence(
            der.octet_string(salt),
            der.integer(ITERATIONS),
            der.sequence(der.oid(OID_HMAC_SHA256), b"\x05\x00"),
        ),
    )
    scheme = der.sequence(der.oid(OID_AES256_CBC), der.octet_string(iv))
    algorithm = der.sequence(der.oid(OID_PBES2), der.sequence(kdf, scheme))
    return der.sequence(algorithm, der.octet_string(sealed))


def decrypt(data: bytes, password: bytes) -> bytes | None:
    """The PrivateKeyInfo DER inside a PBES2 (PBKDF2, AES-CBC) EncryptedPrivateKeyInfo; None for
    anything else (another scheme, not this structure) or a password that does not open it."""
    try:
        _, body, _ = der.read(data, der.SEQUENCE)
        (_, algorithm), (tag, sealed) = der.items(body)
        oid, params = der.items(algorithm)
        if tag != der.OCTET_STRING or der.read_oid(oid[1]) != OID_PBES2:
            return None
        kdf, scheme = der.items(params[1])
        kdf_oid, kdf_params = der.items(kdf[1])
        if der.read_oid(kdf_oid[1]) != OID_PBKDF2:
            return None
        fields = der.items(kdf_params[1])
        salt, rounds = fields[0][1], der.read_integer(fields[1][1])
        prf = hashes.SHA1
        key_len = None
        for tag, value in fields[2:]:
            if tag == der.INTEGER:
                key_len = der.read_integer(value)
            elif tag == der.SEQUENCE:
                prf = _PRFS.get(der.read_oid(der.items(value)[0][1]))  # type: ignore[assignment]
        cipher_oid, iv = der.items(scheme[1])
        size = _AES.get(der.read_oid(cipher_oid[1]))
        if prf is None or size is None or key_len not in (None, size) or len(iv[1]) != 16:
            return None
        key = PBKDF2HMAC(prf(), size, salt, rounds).derive(password)
        dec = Cipher(algorithms.AES(key), modes.CBC(iv[1])).decryptor()
        unpadder = padding.PKCS7(128).unpadder()
        return unpadder.update(dec.update(sealed) + dec.finalize()) + unpadder.finalize()
    except (ValueError, IndexError):
        return None
