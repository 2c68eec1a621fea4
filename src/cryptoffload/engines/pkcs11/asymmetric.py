"""Public-key operations on the token: ECDSA, ECDH, RSA signatures and OAEP decryption."""

from __future__ import annotations

import ctypes
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import padding as _padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa

from cryptoffload.engines.pkcs11 import ck, formats
from cryptoffload.engines.pkcs11.keys import (
    Held,
    TokenEcPrivateKey,
    TokenRsaPrivateKey,
    fingerprint,
)
from cryptoffload.errors import NoResult, Unavailable

_SIGNATURE_FAILED = frozenset({ck.CKR_SIGNATURE_INVALID, ck.CKR_SIGNATURE_LEN_RANGE})


def ec_private(engine: Any, key: Any, curve: str) -> Any:
    """A context giving the handle of an EC private key: imported, or our token key."""
    if isinstance(key, TokenEcPrivateKey):
        if key.ref.engine != engine.name:
            raise key.refuse(engine.name)
        return Held(engine._ref_handle(key.ref))
    if not isinstance(key, _ec.EllipticCurvePrivateKey):
        raise Unavailable("unsupported", f"key of type {type(key).__name__}")
    size = formats.CURVE_BYTES[curve]
    value = key.private_numbers().private_value.to_bytes(size, "big")
    return engine._imported(
        fingerprint("ec-" + curve, value),
        lambda: [
            (ck.CKA_CLASS, ck.CKO_PRIVATE_KEY),
            (ck.CKA_KEY_TYPE, ck.CKK_EC),
            (ck.CKA_EC_PARAMS, formats.CURVE_OID[curve]),
            (ck.CKA_VALUE, value),
            (ck.CKA_SIGN, True),
            (ck.CKA_DERIVE, True),
            (ck.CKA_SENSITIVE, True),
        ],
    )


def ecdsa(engine: Any, op: Any) -> Any:
    """Sign (r‖s to DER; RFC 6979 declined) or verify (DER to r‖s) a digest."""
    curve = op.alg.split("-")[1]
    module = engine._module()
    mech = ck.Mechanism(ck.CKM_ECDSA, None, 0)
    size = formats.CURVE_BYTES[curve]
    if op.kind == "sign":
        if op.deterministic:
            raise Unavailable("unsupported", "RFC 6979 deterministic ECDSA")
        with ec_private(engine, op.key, curve) as key, engine._token.session() as s:
            raw = module.one_shot("C_SignInit", "C_Sign", s, mech, key, op.digest, 2 * size)
        return formats.rs_to_der(raw)
    rs = formats.der_to_rs(op.signature, size)
    if rs is None:
        raise InvalidSignature()
    point = formats.ec_point(op.key)
    handle = engine._imported(
        fingerprint("ecpub-" + curve, point),
        lambda: [
            (ck.CKA_CLASS, ck.CKO_PUBLIC_KEY),
            (ck.CKA_KEY_TYPE, ck.CKK_EC),
            (ck.CKA_EC_PARAMS, formats.CURVE_OID[curve]),
            (ck.CKA_EC_POINT, formats.der_octet_string(point)),
            (ck.CKA_VERIFY, True),
        ],
    )
    with handle as key, engine._token.session() as s:
        rv = module.verify(s, mech, key, op.digest, rs)
    if rv in _SIGNATURE_FAILED:
        raise InvalidSignature()
    if rv != ck.CKR_OK:
        raise ck.CkError("C_Verify", rv)
    return None


def ecdh(engine: Any, op: Any) -> bytes:
    """The shared x coordinate, derived as a session object, read and destroyed."""
    curve = op.alg.split("-")[1]
    module = engine._module()
    size = formats.CURVE_BYTES[curve]
    point = ck.buf(formats.ec_point(op.peer))
    params = ck.Ecdh1Params(
        ck.CKD_NULL, 0, None, ctypes.sizeof(point), ctypes.cast(point, ctypes.c_void_p)
    )
    mech = ck.mechanism(ck.CKM_ECDH1_DERIVE, params)
    template = [
        (ck.CKA_CLASS, ck.CKO_SECRET_KEY),
        (ck.CKA_KEY_TYPE, ck.CKK_GENERIC_SECRET),
        (ck.CKA_TOKEN, False),
        (ck.CKA_SENSITIVE, False),
        (ck.CKA_EXTRACTABLE, True),
        (ck.CKA_VALUE_LEN, size),
    ]
    with ec_private(engine, op.key, curve) as key, engine._token.session() as s:
        secret = module.derive(s, mech, key, template)
        try:
            value = module.attribute(s, secret, ck.CKA_VALUE)
        finally:
            module.destroy(s, secret)
    if len(value) != size:
        raise RuntimeError(f"{engine.name} derived {len(value)} bytes, not {size}")
    return value


def rsa_private(engine: Any, key: Any) -> Any:
    """A context giving the handle of an RSA private key: imported, or our token key."""
    if isinstance(key, TokenRsaPrivateKey):
        if key.ref.engine != engine.name:
            raise key.refuse(engine.name)
        return Held(engine._ref_handle(key.ref))
    if not isinstance(key, _rsa.RSAPrivateKey):
        raise Unavailable("unsupported", f"key of type {type(key).__name__}")
    nums = key.private_numbers()
    pub = nums.public_numbers

    def b(v: int) -> bytes:
        return v.to_bytes((v.bit_length() + 7) // 8 or 1, "big")

    return engine._imported(
        fingerprint("rsa", b(pub.n) + b(nums.d)),
        lambda: [
            (ck.CKA_CLASS, ck.CKO_PRIVATE_KEY),
            (ck.CKA_KEY_TYPE, ck.CKK_RSA),
            (ck.CKA_MODULUS, b(pub.n)),
            (ck.CKA_PUBLIC_EXPONENT, b(pub.e)),
            (ck.CKA_PRIVATE_EXPONENT, b(nums.d)),
            (ck.CKA_PRIME_1, b(nums.p)),
            (ck.CKA_PRIME_2, b(nums.q)),
            (ck.CKA_EXPONENT_1, b(nums.dmp1)),
            (ck.CKA_EXPONENT_2, b(nums.dmq1)),
            (ck.CKA_COEFFICIENT, b(nums.iqmp)),
            (ck.CKA_SIGN, True),
            (ck.CKA_DECRYPT, True),
            (ck.CKA_SENSITIVE, True),
        ],
    )


def rsa(engine: Any, op: Any) -> Any:
    """Sign (PKCS#1 v1.5 with DigestInfo, PSS) and OAEP decryption; the rest declined."""
    module = engine._module()
    bits = op.key.key_size
    room = (bits + 7) // 8
    keep: Any = None
    if op.kind == "sign":
        hash_name = op.hash_alg.name
        if isinstance(op.padding, _padding.PKCS1v15):
            prefix = formats.DIGEST_INFO.get(hash_name)
            if prefix is None:
                raise Unavailable("unsupported", f"PKCS#1 v1.5 with {hash_name}")
            mech = ck.Mechanism(ck.CKM_RSA_PKCS, None, 0)
            data = prefix + bytes(op.digest)
        elif isinstance(op.padding, _padding.PSS):
            salt = formats.pss_salt(op.padding, op.hash_alg, bits)
            mgf = op.padding._mgf._algorithm.name
            if hash_name not in formats.HASH_MECH or mgf not in formats.HASH_MECH:
                raise Unavailable("unsupported", f"PSS with {hash_name}/MGF1-{mgf}")
            if salt is None or salt < 0:
                raise Unavailable("unsupported", "PSS salt length AUTO (verify only)")
            keep = ck.PssParams(formats.HASH_MECH[hash_name][0], formats.HASH_MECH[mgf][1], salt)
            mech = ck.mechanism(ck.CKM_RSA_PKCS_PSS, keep)
            data = bytes(op.digest)
        else:
            raise Unavailable("unsupported", f"RSA padding {type(op.padding).__name__}")
        with rsa_private(engine, op.key) as key, engine._token.session() as s:
            return module.one_shot("C_SignInit", "C_Sign", s, mech, key, data, room)
    if op.kind == "decrypt":
        if not isinstance(op.padding, _padding.OAEP):
            # PKCS#1 v1.5: OpenSSL answers a bad ciphertext with implicit rejection (random
            # bytes), a token with an error: they would not agree.
            raise Unavailable("unsupported", "RSA PKCS#1 v1.5 decryption")
        hash_name = op.padding._algorithm.name
        mgf = op.padding._mgf._algorithm.name
        if hash_name not in formats.HASH_MECH or mgf not in formats.HASH_MECH:
            raise Unavailable("unsupported", f"OAEP with {hash_name}/MGF1-{mgf}")
        label = op.padding._label or b""
        label_buf = ck.buf(label)
        keep = ck.OaepParams(
            formats.HASH_MECH[hash_name][0],
            formats.HASH_MECH[mgf][1],
            ck.CKZ_DATA_SPECIFIED,
            ctypes.cast(label_buf, ctypes.c_void_p) if label else None,
            len(label),
        )
        mech = ck.mechanism(ck.CKM_RSA_PKCS_OAEP, keep)
        with rsa_private(engine, op.key) as key, engine._token.session() as s:
            try:
                return module.one_shot("C_DecryptInit", "C_Decrypt", s, mech, key, op.data, room)
            except ck.CkError as exc:
                if exc.call == "C_Decrypt" and exc.rv in ck.DECRYPT_FAILED:
                    raise NoResult("Decryption failed") from None
                raise
    raise Unavailable("unsupported", f"RSA {op.kind} on a token")


# -- token keys ----------------------------------------------------------------------
