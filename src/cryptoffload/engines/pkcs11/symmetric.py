"""Symmetric operations on the token: AES-GCM, AES ECB/CBC/CTR, SHA, HMAC and CMAC."""

from __future__ import annotations

import ctypes
from typing import Any

from cryptography.exceptions import InvalidTag

from cryptoffload.devicekey import DeviceKey
from cryptoffload.engines.pkcs11 import ck, mechanisms
from cryptoffload.engines.pkcs11.keys import Held, TokenAesKey, fingerprint
from cryptoffload.errors import Unavailable

_GCM_NONCE = 12  # RFC 5288 nonces only: other lengths go through GHASH, which tokens differ on


def aes_handle(engine: Any, key: Any) -> Any:
    """A context giving the handle of an AES key: imported bytes, or our token key."""
    if isinstance(key, TokenAesKey) and key.engine == engine.name:
        return Held(engine._ref_handle(key.ref))
    if isinstance(key, DeviceKey):
        raise key.refuse(engine.name)
    material = bytes(key)
    return engine._imported(
        fingerprint("aes", material),
        lambda: [
            (ck.CKA_CLASS, ck.CKO_SECRET_KEY),
            (ck.CKA_KEY_TYPE, ck.CKK_AES),
            (ck.CKA_VALUE, material),
            (ck.CKA_ENCRYPT, True),
            (ck.CKA_DECRYPT, True),
            (ck.CKA_SIGN, True),
            (ck.CKA_SENSITIVE, True),
            (ck.CKA_EXTRACTABLE, False),
        ],
    )


def aead(engine: Any, op: Any) -> bytes:
    """AES-GCM, the nonce and tag length checked, a failed tag InvalidTag."""
    if len(op.iv) != _GCM_NONCE:
        raise Unavailable("unsupported", f"GCM nonce of {len(op.iv)} bytes (12 only)")
    if op.tag_length not in engine._gcm_tags:
        raise Unavailable("unsupported", f"GCM tag of {op.tag_length} bytes")
    module = engine._module()
    iv, aad = ck.buf(op.iv), ck.buf(op.aad or b"")
    params = ck.GcmParams(
        ctypes.cast(iv, ctypes.c_void_p), len(op.iv), len(op.iv) * 8,
        ctypes.cast(aad, ctypes.c_void_p), len(op.aad or b""), op.tag_length * 8,
    )  # fmt: skip
    mech = ck.mechanism(ck.CKM_AES_GCM, params)
    data = op.data
    with aes_handle(engine, op.key) as key, engine._token.session() as s:
        if op.kind == "encrypt":
            return module.one_shot(
                "C_EncryptInit", "C_Encrypt", s, mech, key, data, len(data) + op.tag_length
            )
        try:
            return module.one_shot("C_DecryptInit", "C_Decrypt", s, mech, key, data, len(data))
        except ck.CkError as exc:
            # No plaintext was released (SoftHSM reports the tag as CKR_GENERAL_ERROR).
            if exc.call == "C_Decrypt" and exc.rv in ck.DECRYPT_FAILED:
                raise InvalidTag() from None
            raise


def cipher(engine: Any, op: Any) -> Any:
    """AES ECB, CBC and CTR (a counter that would wrap declined), into ``out`` if given."""
    mode = op.alg.rsplit("-", 1)[1]
    if mode not in ("ecb", "cbc", "ctr"):
        raise Unavailable("unsupported", f"AES mode {mode}")
    module = engine._module()
    params: Any = None
    if mode == "cbc":
        params = ck.buf(op.iv)
        mech = ck.Mechanism(ck.CKM_AES_CBC, ctypes.cast(params, ctypes.c_void_p), 16)
    elif mode == "ctr":
        counter = int.from_bytes(op.iv, "big")
        blocks = (len(op.data) + 15) // 16
        if counter + blocks > 1 << 128:
            raise Unavailable("unsupported", "the CTR counter would wrap past 2^128")
        params = ck.CtrParams(128, (ctypes.c_ubyte * 16).from_buffer_copy(bytes(op.iv)))
        mech = ck.mechanism(ck.CKM_AES_CTR, params)
    else:
        mech = ck.Mechanism(ck.CKM_AES_ECB, None, 0)
    n = len(op.data)
    if n == 0:
        return 0 if op.out is not None else b""
    init, call = (
        ("C_EncryptInit", "C_Encrypt") if op.kind == "encrypt" else ("C_DecryptInit", "C_Decrypt")
    )
    with aes_handle(engine, op.key) as key, engine._token.session() as s:
        result = module.one_shot(init, call, s, mech, key, op.data, n)
    if len(result) != n:
        raise RuntimeError(f"{engine.name} returned {len(result)} bytes for {n}")
    if op.out is not None:
        op.out[:n] = result
        return n
    return result


def digest(engine: Any, op: Any) -> bytes:
    """SHA-1 and SHA-2."""
    mech_id, size = mechanisms.HASHES[op.alg]
    with engine._token.session() as s:
        return engine._module().digest(s, ck.Mechanism(mech_id, None, 0), op.data, size)


def mac(engine: Any, op: Any) -> bytes:
    """CMAC and HMAC; an HMAC key under the token's minimum zero-padded where that is exact."""
    module = engine._module()
    if op.alg.startswith("cmac-aes-"):
        mech = ck.Mechanism(ck.CKM_AES_CMAC, None, 0)
        with aes_handle(engine, op.key) as key, engine._token.session() as s:
            return module.one_shot("C_SignInit", "C_Sign", s, mech, key, op.data, 16)
    mech_id, size, block = mechanisms.HMACS[op.alg]
    material = bytes(op.key)
    lo, hi = engine._hmac_range.get(op.alg, (1, block))
    if len(material) > hi or len(material) == 0:
        raise Unavailable("unsupported", f"HMAC key of {len(material)} bytes ({lo}-{hi})")
    if len(material) < lo:
        if lo > block:  # zero-padding is exact only up to the hash's block size
            raise Unavailable("unsupported", f"HMAC key of {len(material)} bytes (min {lo})")
        material = material + bytes(lo - len(material))
    mech = ck.Mechanism(mech_id, None, 0)
    handle = engine._imported(
        fingerprint("hmac", material),
        lambda: [
            (ck.CKA_CLASS, ck.CKO_SECRET_KEY),
            (ck.CKA_KEY_TYPE, ck.CKK_GENERIC_SECRET),
            (ck.CKA_VALUE, material),
            (ck.CKA_SIGN, True),
            (ck.CKA_SENSITIVE, True),
        ],
    )
    with handle as key, engine._token.session() as s:
        return module.one_shot("C_SignInit", "C_Sign", s, mech, key, op.data, size)
