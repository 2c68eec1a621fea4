"""RSA keys whose private and public operations are offered to engines; padding in software."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa
from cryptography.hazmat.primitives.asymmetric.padding import AsymmetricPadding
from cryptography.hazmat.primitives.asymmetric.rsa import (
    _modinv,
    rsa_crt_dmp1,
    rsa_crt_dmq1,
    rsa_crt_iqmp,
    rsa_recover_prime_factors,
    rsa_recover_private_exponent,
)
from cryptography.hazmat.primitives.asymmetric.utils import NoDigestInfo, Prehashed

from cryptoffload._keys import _OFFERED, PrivateKey, PublicKey, check_hash, digest_for
from cryptoffload._numbers import Numbers, unwrap
from cryptoffload.blocks import pkcs1
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.core import validate
from cryptoffload.core.ops import RsaOp
from cryptoffload.core.provider import Provider, resolve
from cryptoffload.errors import OffloadRequired

#: The asyncio helpers: loaded by the first ``*_async`` call (their import is a start-up cost).
asyncio_lane = LazyModule("cryptoffload.core.asyncio_lane")

__all__ = [
    "AsymmetricPadding",
    "RSAPrivateKey",
    "RSAPrivateKeyWithSerialization",
    "RSAPrivateNumbers",
    "RSAPublicKey",
    "RSAPublicKeyWithSerialization",
    "RSAPublicNumbers",
    "generate_private_key",
    "padding",
    "private_key_from_numbers",
    "public_key_from_numbers",
    "rsa_crt_dmp1",
    "rsa_crt_dmq1",
    "rsa_crt_iqmp",
    "rsa_recover_prime_factors",
    "rsa_recover_private_exponent",
]

#: Our names of RSA public keys' ops by key size (made once: verify asks per op).
_PUBLIC_NAMES: dict[int, str] = {}
_PKCS1v15, _PSS, _MGF1 = padding.PKCS1v15, padding.PSS, padding.MGF1


#: `cryptography`'s modular inverse (its own tests read it).
__all__ += ["_modinv"]


def _in_software(lane: Any) -> None:
    """For what no engine op carries (no DigestInfo, recovery): software, unless the policy
    requires offload."""
    if lane.required:
        raise OffloadRequired(lane.alg, {})


class RSAPublicNumbers(Numbers):
    """An RSA public key's numbers (e, n); ``public_key()`` gives this package's key.

    Checked, compared and hashed as `cryptography`'s, and equal to its ``RSAPublicNumbers``.
    """

    __slots__ = ()
    _WRAPS = _rsa.RSAPublicNumbers

    def __init__(self, e: int, n: int) -> None:
        self._raw = _rsa.RSAPublicNumbers(e, n)

    @property
    def e(self) -> int:
        """The public exponent."""
        return self._raw.e

    @property
    def n(self) -> int:
        """The modulus."""
        return self._raw.n

    def public_key(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> RSAPublicKey:
        """The public key, offered to the provider in force (or ``provider``)."""
        return RSAPublicKey(self._raw.public_key(), provider=provider)


class RSAPrivateNumbers(Numbers):
    """An RSA private key's numbers; ``private_key()`` gives this package's key.

    Checked, compared and hashed as `cryptography`'s, and equal to its ``RSAPrivateNumbers``;
    ``public_numbers`` may be either class.
    """

    __slots__ = ()
    _WRAPS = _rsa.RSAPrivateNumbers

    def __init__(
        self,
        p: int,
        q: int,
        d: int,
        dmp1: int,
        dmq1: int,
        iqmp: int,
        public_numbers: RSAPublicNumbers | _rsa.RSAPublicNumbers,
    ) -> None:
        self._raw = _rsa.RSAPrivateNumbers(p, q, d, dmp1, dmq1, iqmp, unwrap(public_numbers))

    p = property(lambda self: self._raw.p, doc="The first prime.")
    q = property(lambda self: self._raw.q, doc="The second prime.")
    d = property(lambda self: self._raw.d, doc="The private exponent.")
    dmp1 = property(lambda self: self._raw.dmp1, doc="d mod (p - 1).")
    dmq1 = property(lambda self: self._raw.dmq1, doc="d mod (q - 1).")
    iqmp = property(lambda self: self._raw.iqmp, doc="q^-1 mod p.")

    @property
    def public_numbers(self) -> RSAPublicNumbers:
        """The public numbers (e, n)."""
        return RSAPublicNumbers._wrap(self._raw.public_numbers)

    def private_key(
        self,
        backend: object = None,
        *,
        unsafe_skip_rsa_key_validation: bool = False,
        provider: Provider | None = None,
    ) -> RSAPrivateKey:
        """The private key (checked by OpenSSL unless told not to), offered to the provider."""
        raw = self._raw.private_key(unsafe_skip_rsa_key_validation=unsafe_skip_rsa_key_validation)
        return RSAPrivateKey(raw, provider=provider)

    def __repr__(self) -> str:
        return "<RSAPrivateNumbers>"


class RSAPublicKey(PublicKey):
    """An RSA public key: ``verify``, ``encrypt``, and the raw operation m^e mod n."""

    __slots__ = ()
    _WRAPS = _rsa.RSAPublicKey
    _NATIVE = _rsa.RSAPublicKey
    _EXPECTED = "an RSA public key"
    _NUMBERS = RSAPublicNumbers

    @property
    def _alg(self) -> str:
        bits = self._key.key_size
        name = _PUBLIC_NAMES.get(bits)
        if name is None:
            name = _PUBLIC_NAMES[bits] = f"rsa-{bits}-public"
        return name

    def verify(self, signature: bytes, data: bytes, padding: Any, algorithm: Any) -> None:
        """Raise InvalidSignature unless ``signature`` signs ``data`` hashed with ``algorithm``."""
        key = self._key
        lane = resolve(self._provider).lane(self._alg)
        pad = padding.__class__
        if (
            lane.software_only
            and data.__class__ is bytes
            and signature.__class__ is bytes
            and algorithm.__class__ in _OFFERED
            and (pad is _PKCS1v15 or (pad is _PSS and padding._mgf.__class__ is _MGF1))
        ):
            # Every check of the path below holds for these: `cryptography` verifies at once
            # (a signature of another length than the key's: InvalidSignature, as below).
            try:
                if len(signature) != (key.key_size + 7) // 8:
                    raise InvalidSignature
                key.verify(signature, data, padding, algorithm)
            except InvalidSignature:
                lane.count(0)
                raise
            lane.count(0)
            return
        validate.byteslike("data", data)
        if isinstance(algorithm, NoDigestInfo):  # no op carries it: software finishes it
            _in_software(lane)
        if lane.software_only or isinstance(algorithm, NoDigestInfo):
            validate.byteslike("signature", signature)
            validate.rsa_padding(padding)
            if not isinstance(algorithm, NoDigestInfo):
                check_hash(algorithm)
            if isinstance(algorithm, Prehashed):  # as `cryptography`: the digest before the rest
                validate.digest_fits(data, algorithm._algorithm)
            try:
                pkcs1.check_signature_length(signature, self._key.key_size)
                self._key.verify(signature, data, padding, algorithm)
            except InvalidSignature:
                lane.count(0)
                raise
            lane.count(0)
            return
        lane.run(self._verify_op(lane, signature, data, padding, algorithm))

    def _verify_op(
        self, lane: Any, signature: Any, data: Any, padding: Any, algorithm: Any
    ) -> RsaOp:
        digest, hash_alg = digest_for(data, algorithm)
        return RsaOp(
            lane.alg,
            "verify",
            self._key,
            digest=digest,
            signature=signature,
            padding=padding,
            hash_alg=hash_alg,
        )

    async def verify_async(
        self, signature: bytes, data: bytes, padding: Any, algorithm: Any
    ) -> None:
        """:meth:`verify`, awaited (see :mod:`cryptoffload.core.asyncio_lane`): InvalidSignature
        and every other error as the sync call, the same counts."""
        lane = self._lane(self._alg)

        def build() -> RsaOp:
            validate.byteslike("data", data)
            return self._verify_op(lane, signature, data, padding, algorithm)

        carried = not isinstance(algorithm, NoDigestInfo)
        await asyncio_lane.offload(
            lane, build if carried else None, self.verify, signature, data, padding, algorithm
        )

    def encrypt(self, plaintext: bytes, padding: Any) -> bytes:
        """Encrypt a short message with OAEP or PKCS#1 v1.5 padding."""
        lane = self._lane(self._alg)
        if lane.software_only:
            validate.byteslike("plaintext", plaintext)
            validate.rsa_padding(padding)
            out = self._key.encrypt(plaintext, padding)
            lane.count(0)
            return out
        return lane.run(RsaOp(lane.alg, "encrypt", self._key, data=plaintext, padding=padding))

    async def encrypt_async(self, plaintext: bytes, padding: Any) -> bytes:
        """:meth:`encrypt`, awaited: the same ciphertext shape, errors and counts."""
        lane = self._lane(self._alg)
        return await asyncio_lane.offload(
            lane,
            lambda: RsaOp(lane.alg, "encrypt", self._key, data=plaintext, padding=padding),
            self.encrypt,
            plaintext,
            padding,
        )

    def recover_data_from_signature(
        self, signature: bytes, padding: Any, algorithm: Any | None
    ) -> bytes:
        """The data (a digest, or with ``NoDigestInfo``/``None`` the whole DigestInfo) that a
        PKCS#1 v1.5 ``signature`` signs; InvalidSignature if it does not verify. Runs in
        software (no engine op carries it), counted on this key's lane."""
        lane = self._lane(self._alg)
        _in_software(lane)
        validate.byteslike("signature", signature)
        validate.rsa_padding(padding)
        if isinstance(algorithm, Prehashed):
            raise TypeError(
                "Prehashed is only supported in the sign and verify methods. "
                "It cannot be used with recover_data_from_signature."
            )
        if algorithm is not None and not isinstance(algorithm, NoDigestInfo):
            check_hash(algorithm)
        try:
            return self._key.recover_data_from_signature(signature, padding, algorithm)
        finally:
            lane.count(0)

    def raw_public(self, value: int) -> int:
        """value^e mod n, for 0 < value < n: the bare RSA public operation, no padding."""
        return self._lane(self._alg).run(RsaOp(self._alg, "raw", self._key, value=value))


class RSAPrivateKey(PrivateKey):
    """An RSA private key: ``sign``, ``decrypt``, and the raw operation c^d mod n."""

    __slots__ = ()
    _WRAPS = _rsa.RSAPrivateKey
    _NATIVE = _rsa.RSAPrivateKey
    _EXPECTED = "an RSA private key"
    _PUBLIC = RSAPublicKey
    _NUMBERS = RSAPrivateNumbers

    @property
    def _alg(self) -> str:
        return f"rsa-{self._key.key_size}-private"

    def sign(self, data: bytes, padding: Any, algorithm: Any) -> bytes:
        """Sign ``data`` (hashed with ``algorithm``, or ``Prehashed``) with PKCS#1 v1.5 or PSS."""
        validate.byteslike("data", data)
        lane = self._lane(self._alg)
        if isinstance(algorithm, NoDigestInfo):  # no op carries it: software finishes it
            _in_software(lane)
        if lane.software_only or isinstance(algorithm, NoDigestInfo):
            validate.rsa_padding(padding)
            if not isinstance(algorithm, NoDigestInfo):
                check_hash(algorithm)
            out = self._key.sign(data, padding, algorithm)
            lane.count(0)
            return out
        return lane.run(self._sign_op(lane, data, padding, algorithm))

    def _sign_op(self, lane: Any, data: Any, padding: Any, algorithm: Any) -> RsaOp:
        digest, hash_alg = digest_for(data, algorithm)
        return RsaOp(lane.alg, "sign", self._key, digest=digest, padding=padding, hash_alg=hash_alg)

    async def sign_async(self, data: bytes, padding: Any, algorithm: Any) -> bytes:
        """:meth:`sign`, awaited (see :mod:`cryptoffload.core.asyncio_lane`): the same errors and
        counts (a PSS signature differs from run to run, as the sync call's does)."""
        lane = self._lane(self._alg)

        def build() -> RsaOp:
            validate.byteslike("data", data)
            return self._sign_op(lane, data, padding, algorithm)

        carried = not isinstance(algorithm, NoDigestInfo)
        return await asyncio_lane.offload(
            lane, build if carried else None, self.sign, data, padding, algorithm
        )

    def decrypt(self, ciphertext: bytes, padding: Any) -> bytes:
        """Decrypt OAEP or PKCS#1 v1.5; ValueError when the ciphertext is not valid."""
        lane = self._lane(self._alg)
        if lane.software_only:
            validate.byteslike("ciphertext", ciphertext)
            validate.rsa_padding(padding)
            # Refused uncounted, as on the engine path: not a ciphertext of this key at all.
            validate.rsa_ciphertext(ciphertext, self._key.public_key().public_numbers().n)
            try:
                return self._key.decrypt(ciphertext, padding)
            finally:
                lane.count(0)
        return lane.run(RsaOp(lane.alg, "decrypt", self._key, data=ciphertext, padding=padding))

    async def decrypt_async(self, ciphertext: bytes, padding: Any) -> bytes:
        """:meth:`decrypt`, awaited: the plaintext, or the same ValueError, and the same
        counts."""
        lane = self._lane(self._alg)
        return await asyncio_lane.offload(
            lane,
            lambda: RsaOp(lane.alg, "decrypt", self._key, data=ciphertext, padding=padding),
            self.decrypt,
            ciphertext,
            padding,
        )

    def raw_private(self, value: int) -> int:
        """value^d mod n, for 0 < value < n: the bare RSA private operation, no padding."""
        return self._lane(self._alg).run(RsaOp(self._alg, "raw", self._key, value=value))


def generate_private_key(
    public_exponent: int, key_size: int, backend: object = None, *, provider: Provider | None = None
) -> RSAPrivateKey:
    """A new RSA key (generation runs in OpenSSL)."""
    return RSAPrivateKey(_rsa.generate_private_key(public_exponent, key_size), provider=provider)


def private_key_from_numbers(
    numbers: RSAPrivateNumbers | _rsa.RSAPrivateNumbers, *, provider: Provider | None = None
) -> RSAPrivateKey:
    """The key with these numbers, ours or `cryptography`'s (checked by OpenSSL)."""
    return RSAPrivateKey(unwrap(numbers).private_key(), provider=provider)


def public_key_from_numbers(
    numbers: RSAPublicNumbers | _rsa.RSAPublicNumbers, *, provider: Provider | None = None
) -> RSAPublicKey:
    """The public key (e, n), from our numbers or `cryptography`'s."""
    return RSAPublicKey(unwrap(numbers).public_key(), provider=provider)


RSAPublicKeyWithSerialization = RSAPublicKey
RSAPrivateKeyWithSerialization = RSAPrivateKey
_rsa.RSAPublicKey.register(RSAPublicKey)
_rsa.RSAPrivateKey.register(RSAPrivateKey)
