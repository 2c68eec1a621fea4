"""The PKCS#11 engine: runs ops on a token (an HSM, a smart card, a TPM, SoftHSM), with the
caller's keys imported as session objects or with keys that live on the token."""

from __future__ import annotations

import ctypes
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import padding as _padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa

from cryptoffload.devicekey import DeviceKey
from cryptoffload.engines import _fork
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.pkcs11 import ck, formats, kat, mechanisms
from cryptoffload.engines.pkcs11.keys import (
    KeyCache,
    TokenAesKey,
    TokenEcPrivateKey,
    TokenKeyRef,
    TokenRsaPrivateKey,
    find,
    fingerprint,
)
from cryptoffload.engines.pkcs11.sessions import RESET_ON, Token, TokenUnavailable
from cryptoffload.engines.pkcs11.spec import Spec
from cryptoffload.errors import NoResult, Unavailable

#: Token answers that mean "not this mechanism, size or parameter": declined with the reason.
DECLINED = frozenset(
    {
        ck.CKR_MECHANISM_INVALID,
        ck.CKR_MECHANISM_PARAM_INVALID,
        ck.CKR_KEY_SIZE_RANGE,
        ck.CKR_KEY_TYPE_INCONSISTENT,
        ck.CKR_KEY_FUNCTION_NOT_PERMITTED,
        ck.CKR_DATA_LEN_RANGE,
        ck.CKR_ARGUMENTS_BAD,
        ck.CKR_FUNCTION_NOT_SUPPORTED,
        ck.CKR_TEMPLATE_INCONSISTENT,
        ck.CKR_ATTRIBUTE_VALUE_INVALID,
        ck.CKR_CURVE_NOT_SUPPORTED,
        ck.CKR_DOMAIN_PARAMS_INVALID,
    }
)
_SIGNATURE_FAILED = frozenset({ck.CKR_SIGNATURE_INVALID, ck.CKR_SIGNATURE_LEN_RANGE})
_NOT_DECRYPTED = frozenset(
    {ck.CKR_ENCRYPTED_DATA_INVALID, ck.CKR_ENCRYPTED_DATA_LEN_RANGE, ck.CKR_DATA_INVALID}
)
_GCM_NONCE = 12  # RFC 5288 nonces only: other lengths go through GHASH, which tokens differ on


class Pkcs11Engine:
    """An engine over one token of a PKCS#11 module (see the package docstring for the spec)."""

    def __init__(self, spec: Spec, cache_size: int = 64) -> None:
        self.spec = spec
        self.name = f"pkcs11:{spec.token}"
        self._token = Token(spec)
        self._cache = KeyCache(self._token, cache_size)
        self._claims: dict[str, mechanisms.Claim] = {}
        self._hmac_range: dict[str, tuple[int, int]] = {}
        self._probed: Capabilities | None = None
        #: Set by the probe when the token refuses C_CreateObject for keys (a TPM): caller keys
        #: are declined at once, and only keys made on the token run there.
        self.imports_refused = False
        #: GCM tag lengths the token was seen to produce as software does (probe widens it).
        self._gcm_tags: frozenset[int] = frozenset({16})
        _fork.watch(self)

    def __repr__(self) -> str:
        return f"<Pkcs11Engine {self.spec.text()}>"

    # -- probe ---------------------------------------------------------------------------

    def probe(self) -> Capabilities:
        """Open the token, read its mechanisms, claim what passes a known answer (once: the
        same Capabilities again for every provider built on this engine)."""
        if self._probed is None or not self._probed.available:
            self._probed = self._probe()
        return self._probed

    def _probe(self) -> Capabilities:
        try:
            self._token.open()
            assert self._token.module is not None
            mechs = self._token.module.mechanisms(self._token.slot)
        except TokenUnavailable as exc:
            return Capabilities(available=False, reason=str(exc))
        except ck.CkError as exc:
            return Capabilities(available=False, reason=f"token {self.spec.token!r}: {exc}")
        self._claims = mechanisms.offered(mechs)
        for name, claim in self._claims.items():
            if name.startswith("hmac-"):
                self._hmac_range[name] = (claim.min_key, claim.max_key)
        if "aes-128-gcm" in self._claims:
            self._gcm_tags = frozenset(range(4, 17))  # offered while they are checked
            self._gcm_tags = frozenset({16} | kat.gcm_tags(self, "aes-128-gcm"))
        refused = kat.check(self, set(self._claims))
        for name in refused:
            self._claims.pop(name, None)
        info = self._token.info
        assert info is not None
        return Capabilities(
            available=True,
            algorithms=frozenset(self._claims),
            detail={
                "module": self.spec.module,
                "token": self.spec.token,
                "manufacturer": info.manufacturerID.rstrip(b" \0").decode(errors="replace"),
                "model": info.model.rstrip(b" \0").decode(errors="replace"),
                "gcm tag lengths": sorted(self._gcm_tags),
                "imports caller keys": not self.imports_refused,
                "known-answer failures": {k: v for k, v in sorted(refused.items())},
                "mechanisms": mechanisms.describe(mechs),
                "algorithms": {
                    n: {"driver": f"0x{c.mechanism:x}", "hardware": True}
                    for n, c in sorted(self._claims.items())
                },
            },
        )

    # -- running ops ---------------------------------------------------------------------

    def run(self, op: Any) -> Any:
        """Run ``op`` on the token; decline (Unavailable) what it cannot do exactly."""
        handler = _HANDLERS.get(op.family)
        if handler is None or (self._claims and op.alg not in self._claims):
            raise Unavailable("unsupported", f"{self.name} does not claim {op.alg}")
        generation = self._token.generation
        try:
            return handler(self, op)
        except TokenUnavailable as exc:
            raise Unavailable("no-device", str(exc)) from None
        except ck.CkError as exc:
            if exc.rv in DECLINED:
                raise Unavailable("unsupported", f"{self.name}: {exc}") from None
            if exc.rv in RESET_ON:  # a fault now; sessions and keys open afresh for the next
                self._token.reset(generation)
            raise

    def _module(self) -> ck.Module:
        """The module, the token opened first if it is not (first use, after fork or reset)."""
        self._token.ensure()
        assert self._token.module is not None
        return self._token.module

    def _aes_handle(self, key: Any, alg: str, purpose: str) -> Any:
        """A context giving the handle of an AES key: imported bytes, or our token key."""
        if isinstance(key, TokenAesKey) and key.engine == self.name:
            return _Fixed(self._ref_handle(key.ref))
        if isinstance(key, DeviceKey):
            raise key.refuse(self.name)
        material = bytes(key)
        return self._imported(
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

    def _imported(self, name: bytes, template: Any) -> Any:
        """The cache's context for a caller key; declined on a token that imports none."""
        if self.imports_refused:
            raise Unavailable(
                "unsupported", f"{self.name} imports no keys: only keys made on it run there"
            )
        return self._cache.use(name, template)

    def _destroy_token_objects(self, ident: bytes) -> None:
        """Destroy every object with this CKA_ID (the probe's own key pairs)."""
        module = self._module()
        with self._token.keeper() as s:
            for cls in (ck.CKO_PRIVATE_KEY, ck.CKO_PUBLIC_KEY, ck.CKO_SECRET_KEY):
                for handle in module.find(s, [(ck.CKA_CLASS, cls), (ck.CKA_ID, ident)]):
                    module.destroy(s, handle)

    def _ref_handle(self, ref: TokenKeyRef) -> int:
        if ref.token is self._token:
            return ref.handle()
        return find(self._token, ref.cls, ref.label, ref.id)

    def _aead(self, op: Any) -> bytes:
        if len(op.iv) != _GCM_NONCE:
            raise Unavailable("unsupported", f"GCM nonce of {len(op.iv)} bytes (12 only)")
        if op.tag_length not in self._gcm_tags:
            raise Unavailable("unsupported", f"GCM tag of {op.tag_length} bytes")
        module = self._module()
        iv, aad = ck.buf(op.iv), ck.buf(op.aad or b"")
        params = ck.GcmParams(
            ctypes.cast(iv, ctypes.c_void_p), len(op.iv), len(op.iv) * 8,
            ctypes.cast(aad, ctypes.c_void_p), len(op.aad or b""), op.tag_length * 8,
        )  # fmt: skip
        mech = ck.mechanism(ck.CKM_AES_GCM, params)
        data = op.data
        with self._aes_handle(op.key, op.alg, "aead") as key, self._token.session() as s:
            if op.kind == "encrypt":
                return module.one_shot(
                    "C_EncryptInit", "C_Encrypt", s, mech, key, data, len(data) + op.tag_length
                )
            try:
                return module.one_shot("C_DecryptInit", "C_Decrypt", s, mech, key, data, len(data))
            except ck.CkError as exc:
                # SoftHSM reports a failed tag as CKR_GENERAL_ERROR; no plaintext was released.
                if exc.call == "C_Decrypt" and exc.rv in (ck.CKR_GENERAL_ERROR, *_NOT_DECRYPTED):
                    raise InvalidTag() from None
                raise

    def _cipher(self, op: Any) -> Any:
        mode = op.alg.rsplit("-", 1)[1]
        if mode not in ("ecb", "cbc", "ctr"):
            raise Unavailable("unsupported", f"AES mode {mode}")
        module = self._module()
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
            ("C_EncryptInit", "C_Encrypt")
            if op.kind == "encrypt"
            else ("C_DecryptInit", "C_Decrypt")
        )
        with self._aes_handle(op.key, op.alg, "cipher") as key, self._token.session() as s:
            result = module.one_shot(init, call, s, mech, key, op.data, n)
        if len(result) != n:
            raise RuntimeError(f"{self.name} returned {len(result)} bytes for {n}")
        if op.out is not None:
            op.out[:n] = result
            return n
        return result

    def _hash(self, op: Any) -> bytes:
        mech_id, size = mechanisms.HASHES[op.alg]
        with self._token.session() as s:
            return self._module().digest(s, ck.Mechanism(mech_id, None, 0), op.data, size)

    def _mac(self, op: Any) -> bytes:
        module = self._module()
        if op.alg.startswith("cmac-aes-"):
            mech = ck.Mechanism(ck.CKM_AES_CMAC, None, 0)
            with self._aes_handle(op.key, op.alg, "mac") as key, self._token.session() as s:
                return module.one_shot("C_SignInit", "C_Sign", s, mech, key, op.data, 16)
        mech_id, size, block = mechanisms.HMACS[op.alg]
        material = bytes(op.key)
        lo, hi = self._hmac_range.get(op.alg, (1, block))
        if len(material) > hi or len(material) == 0:
            raise Unavailable("unsupported", f"HMAC key of {len(material)} bytes ({lo}-{hi})")
        if len(material) < lo:
            if lo > block:  # zero-padding is exact only up to the hash's block size
                raise Unavailable("unsupported", f"HMAC key of {len(material)} bytes (min {lo})")
            material = material + bytes(lo - len(material))
        mech = ck.Mechanism(mech_id, None, 0)
        handle = self._imported(
            fingerprint("hmac", material),
            lambda: [
                (ck.CKA_CLASS, ck.CKO_SECRET_KEY),
                (ck.CKA_KEY_TYPE, ck.CKK_GENERIC_SECRET),
                (ck.CKA_VALUE, material),
                (ck.CKA_SIGN, True),
                (ck.CKA_SENSITIVE, True),
            ],
        )
        with handle as key, self._token.session() as s:
            return module.one_shot("C_SignInit", "C_Sign", s, mech, key, op.data, size)

    def _ec_private(self, key: Any, curve: str) -> Any:
        if isinstance(key, TokenEcPrivateKey):
            if key.ref.engine != self.name:
                raise key.sign(b"", None)  # raises DeviceKeyError
            return _Fixed(self._ref_handle(key.ref))
        if not isinstance(key, _ec.EllipticCurvePrivateKey):
            raise Unavailable("unsupported", f"key of type {type(key).__name__}")
        size = formats.CURVE_BYTES[curve]
        value = key.private_numbers().private_value.to_bytes(size, "big")
        return self._imported(
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

    def _ecdsa(self, op: Any) -> Any:
        curve = op.alg.split("-")[1]
        module = self._module()
        mech = ck.Mechanism(ck.CKM_ECDSA, None, 0)
        size = formats.CURVE_BYTES[curve]
        if op.kind == "sign":
            if op.deterministic:
                raise Unavailable("unsupported", "RFC 6979 deterministic ECDSA")
            with self._ec_private(op.key, curve) as key, self._token.session() as s:
                raw = module.one_shot("C_SignInit", "C_Sign", s, mech, key, op.digest, 2 * size)
            return formats.rs_to_der(raw)
        rs = formats.der_to_rs(op.signature, size)
        if rs is None:
            raise InvalidSignature()
        point = formats.ec_point(op.key)
        handle = self._imported(
            fingerprint("ecpub-" + curve, point),
            lambda: [
                (ck.CKA_CLASS, ck.CKO_PUBLIC_KEY),
                (ck.CKA_KEY_TYPE, ck.CKK_EC),
                (ck.CKA_EC_PARAMS, formats.CURVE_OID[curve]),
                (ck.CKA_EC_POINT, formats.der_octet_string(point)),
                (ck.CKA_VERIFY, True),
            ],
        )
        with handle as key, self._token.session() as s:
            rv = module.verify(s, mech, key, op.digest, rs)
        if rv in _SIGNATURE_FAILED:
            raise InvalidSignature()
        if rv != ck.CKR_OK:
            raise ck.CkError("C_Verify", rv)
        return None

    def _ecdh(self, op: Any) -> bytes:
        curve = op.alg.split("-")[1]
        module = self._module()
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
        with self._ec_private(op.key, curve) as key, self._token.session() as s:
            secret = module.derive(s, mech, key, template)
            try:
                value = module.attribute(s, secret, ck.CKA_VALUE)
            finally:
                module.destroy(s, secret)
        if len(value) != size:
            raise RuntimeError(f"{self.name} derived {len(value)} bytes, not {size}")
        return value

    def _rsa_private(self, key: Any) -> Any:
        if isinstance(key, TokenRsaPrivateKey):
            if key.ref.engine != self.name:
                raise key.sign(b"", None, None)  # raises DeviceKeyError
            return _Fixed(self._ref_handle(key.ref))
        if not isinstance(key, _rsa.RSAPrivateKey):
            raise Unavailable("unsupported", f"key of type {type(key).__name__}")
        nums = key.private_numbers()
        pub = nums.public_numbers

        def b(v: int) -> bytes:
            return v.to_bytes((v.bit_length() + 7) // 8 or 1, "big")

        return self._imported(
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

    def _rsa(self, op: Any) -> Any:
        module = self._module()
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
                keep = ck.PssParams(
                    formats.HASH_MECH[hash_name][0], formats.HASH_MECH[mgf][1], salt
                )
                mech = ck.mechanism(ck.CKM_RSA_PKCS_PSS, keep)
                data = bytes(op.digest)
            else:
                raise Unavailable("unsupported", f"RSA padding {type(op.padding).__name__}")
            with self._rsa_private(op.key) as key, self._token.session() as s:
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
            with self._rsa_private(op.key) as key, self._token.session() as s:
                try:
                    return module.one_shot(
                        "C_DecryptInit", "C_Decrypt", s, mech, key, op.data, room
                    )
                except ck.CkError as exc:
                    # SoftHSM answers an OAEP ciphertext that does not decrypt with
                    # CKR_GENERAL_ERROR, as it does a failed GCM tag.
                    failed = (ck.CKR_GENERAL_ERROR, *_NOT_DECRYPTED)
                    if exc.call == "C_Decrypt" and exc.rv in failed:
                        raise NoResult("Decryption failed") from None
                    raise
        raise Unavailable("unsupported", f"RSA {op.kind} on a token")

    # -- token keys ----------------------------------------------------------------------

    def key(self, *, label: str | None = None, id: bytes | None = None) -> Any:
        """The key on the token with this label or id: a TokenAesKey (AESGCM and the AES
        ciphers take it like key bytes), or a TokenEcPrivateKey / TokenRsaPrivateKey
        (`cryptography`'s interfaces, taken wherever this package takes a `cryptography` key;
        ``cryptoffload.tokenkeys.key`` gives them as this package's key objects, whose
        ``sign`` and ``decrypt`` run here). LookupError if there is none."""
        if (label is None) == (id is None):
            raise TypeError("give label=... or id=..., one of them")
        self._token.open()
        module = self._module()
        for cls in (ck.CKO_PRIVATE_KEY, ck.CKO_SECRET_KEY):
            try:
                handle = find(self._token, cls, label, id)
            except LookupError:
                continue
            with self._token.session() as s:
                # Known by both label and id from now on: the same key compares equal however
                # it was asked for, and a later search finds exactly it.
                found_label = module.attribute(s, handle, ck.CKA_LABEL).decode(errors="replace")
                found_id = module.attribute(s, handle, ck.CKA_ID) or None
                ref = TokenKeyRef(self._token, self.name, cls, found_label or None, found_id)
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
                    public = find(self._token, ck.CKO_PUBLIC_KEY, label, id)
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
        raise LookupError(f"no private or AES key with {where} on token {self.spec.token!r}")

    def generate_key(
        self,
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
        self._token.open()
        module = self._module()
        ident = bytes(id) if id is not None else label.encode()
        common = [(ck.CKA_TOKEN, True), (ck.CKA_LABEL, label.encode()), (ck.CKA_ID, ident)]
        secret = [*common, (ck.CKA_PRIVATE, True), (ck.CKA_SENSITIVE, True),
                  (ck.CKA_EXTRACTABLE, False)]  # fmt: skip
        with self._token.keeper() as s:
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
        return self.key(id=ident)

    # -- lifetime ------------------------------------------------------------------------

    @property
    def imports(self) -> int:
        """Caller keys imported so far (each once while it stays in the cache)."""
        return self._cache.imports

    def close(self) -> None:
        """Destroy the imported keys, close the sessions, finalize the module."""
        self._cache.clear()
        self._token.close()

    def _after_fork_in_child(self) -> None:
        self._cache.forget()
        self._token.forget()


class _Fixed:
    """A handle that needs no cache entry (a token key), as a context like KeyCache.use."""

    __slots__ = ("handle",)

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __enter__(self) -> int:
        return self.handle

    def __exit__(self, *exc: object) -> None:
        return None


_HANDLERS = {
    "aead": Pkcs11Engine._aead,
    "cipher": Pkcs11Engine._cipher,
    "hash": Pkcs11Engine._hash,
    "mac": Pkcs11Engine._mac,
    "ecdsa": Pkcs11Engine._ecdsa,
    "ecdh": Pkcs11Engine._ecdh,
    "rsa": Pkcs11Engine._rsa,
}
