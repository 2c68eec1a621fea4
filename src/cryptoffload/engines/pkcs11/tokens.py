"""Keys kept on the token: found by label or id, made there (not extractable), destroyed."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa

from cryptoffload.engines.pkcs11 import ck, formats
from cryptoffload.engines.pkcs11.keys import (
    TokenAesKey,
    TokenEcPrivateKey,
    TokenKeyRef,
    TokenRsaPrivateKey,
    find,
)


def destroy_objects(engine: Any, ident: bytes) -> None:
    """Destroy every object with this CKA_ID (the probe's own key pairs)."""
    module = engine._module()
    with engine._token.keeper() as s:
        for cls in (ck.CKO_PRIVATE_KEY, ck.CKO_PUBLIC_KEY, ck.CKO_SECRET_KEY):
            for handle in module.find(s, [(ck.CKA_CLASS, cls), (ck.CKA_ID, ident)]):
                module.destroy(s, handle)


def find_key(engine: Any, *, label: str | None = None, id: bytes | None = None) -> Any:
    """The key on the token with this label or id: a TokenAesKey (AESGCM and the AES
    ciphers take it like key bytes), or a TokenEcPrivateKey / TokenRsaPrivateKey
    (`cryptography`'s interfaces, taken wherever this package takes a `cryptography` key;
    ``cryptoffload.tokenkeys.key`` gives them as this package's key objects, whose
    ``sign`` and ``decrypt`` run here). LookupError if there is none."""
    if (label is None) == (id is None):
        raise TypeError("give label=... or id=..., one of them")
    engine._token.open()
    module = engine._module()
    for cls in (ck.CKO_PRIVATE_KEY, ck.CKO_SECRET_KEY):
        try:
            handle = find(engine._token, cls, label, id)
        except LookupError:
            continue
        with engine._token.session() as s:
            # Known by both label and id from now on: the same key compares equal however
            # it was asked for, and a later search finds exactly it.
            found_label = module.attribute(s, handle, ck.CKA_LABEL).decode(errors="replace")
            found_id = module.attribute(s, handle, ck.CKA_ID) or None
            ref = TokenKeyRef(engine._token, engine.name, cls, found_label or None, found_id)
            kind = int.from_bytes(module.attribute(s, handle, ck.CKA_KEY_TYPE), "little")
            if cls == ck.CKO_SECRET_KEY:
                if kind != ck.CKK_AES:
                    raise LookupError(f"the secret key {ref.where()} is not an AES key")
                n = int.from_bytes(module.attribute(s, handle, ck.CKA_VALUE_LEN), "little")
                return TokenAesKey(ref, n * 8)
            if kind == ck.CKK_RSA:
                n = int.from_bytes(module.attribute(s, handle, ck.CKA_MODULUS), "big")
                e = int.from_bytes(module.attribute(s, handle, ck.CKA_PUBLIC_EXPONENT), "big")
                return TokenRsaPrivateKey(ref, _rsa.RSAPublicNumbers(e, n).public_key())
            if kind == ck.CKK_EC:
                public = find(engine._token, ck.CKO_PUBLIC_KEY, label, id)
                oid = module.attribute(s, public, ck.CKA_EC_PARAMS)
                raw = module.attribute(s, public, ck.CKA_EC_POINT)
                curve = formats.CURVE_OF_OID.get(oid)
                if curve is None:
                    raise LookupError(f"the EC key {ref.where()} is on a curve not offered")
                point = formats.der_octet_string_content(raw)
                pub_ec = _ec.EllipticCurvePublicKey.from_encoded_point(
                    formats.CURVE_CLASS[curve](), point
                )
                return TokenEcPrivateKey(ref, pub_ec)
            raise LookupError(f"the private key {ref.where()} is of a type not offered")
    where = f"label={label!r}" if label is not None else f"id={bytes(id or b'').hex()}"
    raise LookupError(f"no private or AES key with {where} on token {engine.spec.token!r}")


def generate_key(
    engine: Any,
    kind: str,
    *,
    label: str,
    id: bytes | None = None,
    bits: int | None = None,
    curve: str = "p256",
) -> Any:
    """Make a key on the token that cannot be read out (CKA_SENSITIVE, not extractable):
    ``"aes"`` (bits 128/192/256, default 256), ``"ec"`` (curve p256/p384/p521) or
    ``"rsa"`` (bits, default 2048); returns it as :meth:`key` does."""
    engine._token.open()
    module = engine._module()
    ident = bytes(id) if id is not None else label.encode()
    common = [(ck.CKA_TOKEN, True), (ck.CKA_LABEL, label.encode()), (ck.CKA_ID, ident)]
    secret = [*common, (ck.CKA_PRIVATE, True), (ck.CKA_SENSITIVE, True),
              (ck.CKA_EXTRACTABLE, False)]  # fmt: skip
    with engine._token.keeper() as s:
        if kind == "aes":
            nbits = bits or 256
            if nbits not in (128, 192, 256):
                raise ValueError(f"an AES key is of 128, 192 or 256 bits, got {nbits}")
            module.generate_key(
                s,
                ck.Mechanism(ck.CKM_AES_KEY_GEN, None, 0),
                [*secret, (ck.CKA_CLASS, ck.CKO_SECRET_KEY), (ck.CKA_KEY_TYPE, ck.CKK_AES),
                 (ck.CKA_VALUE_LEN, nbits // 8), (ck.CKA_ENCRYPT, True),
                 (ck.CKA_DECRYPT, True), (ck.CKA_SIGN, True)],
            )  # fmt: skip
        elif kind == "ec":
            if curve not in formats.CURVE_OID:
                raise ValueError(f"curve must be one of {', '.join(formats.CURVE_OID)}")
            module.generate_pair(
                s,
                ck.Mechanism(ck.CKM_EC_KEY_PAIR_GEN, None, 0),
                [*common, (ck.CKA_EC_PARAMS, formats.CURVE_OID[curve]), (ck.CKA_VERIFY, True)],
                [*secret, (ck.CKA_SIGN, True), (ck.CKA_DERIVE, True)],
            )
        elif kind == "rsa":
            nbits = bits or 2048
            public = [
                *common,
                (ck.CKA_MODULUS_BITS, nbits),
                (ck.CKA_PUBLIC_EXPONENT, b"\x01\x00\x01"),
                (ck.CKA_VERIFY, True),
                (ck.CKA_ENCRYPT, True),
            ]
            module.generate_pair(
                s,
                ck.Mechanism(ck.CKM_RSA_PKCS_KEY_PAIR_GEN, None, 0),
                public,
                [*secret, (ck.CKA_SIGN, True), (ck.CKA_DECRYPT, True)],
            )
        else:
            raise ValueError(f"kind must be 'aes', 'ec' or 'rsa', got {kind!r}")
    return find_key(engine, id=ident)


# -- lifetime ------------------------------------------------------------------------
