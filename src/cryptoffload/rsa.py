"""RSA keys whose private and public operations are offered to engines; padding in software."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa
from cryptography.hazmat.primitives.asymmetric.padding import AsymmetricPadding
from cryptography.hazmat.primitives.asymmetric.rsa import (
    RSAPrivateNumbers,
    RSAPublicNumbers,
    _modinv,
    rsa_crt_dmp1,
    rsa_crt_dmq1,
    rsa_crt_iqmp,
    rsa_recover_prime_factors,
    rsa_recover_private_exponent,
)
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from cryptoffload import validate
from cryptoffload._keys import PrivateKey, PublicKey, check_hash, digest_for
from cryptoffload.blocks import pkcs1
from cryptoffload.ops import RsaOp
from cryptoffload.provider import Provider

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
#: `cryptography`'s modular inverse (its own tests read it).
__all__ += ["_modinv"]


class RSAPublicKey(PublicKey):
    """An RSA public key: ``verify``, ``encrypt``, and the raw operation m^e mod n."""

    __slots__ = ()
    _WRAPS = _rsa.RSAPublicKey
    _EXPECTED = "an RSA public key"

    @property
    def _alg(self) -> str:
        return f"rsa-{self._key.key_size}-public"

    def verify(self, signature: bytes, data: bytes, padding: Any, algorithm: Any) -> None:
        """Raise InvalidSignature unless ``signature`` signs ``data`` hashed with ``algorithm``."""
        validate.byteslike("data", data)
        lane = self._lane(self._alg)
        if lane.software_only:
            validate.byteslike("signature", signature)
            validate.rsa_padding(padding)
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
        digest, hash_alg = digest_for(data, algorithm)
        lane.run(
            RsaOp(
                lane.alg,
                "verify",
                self._key,
                digest=digest,
                signature=signature,
                padding=padding,
                hash_alg=hash_alg,
            )
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

    def raw_public(self, value: int) -> int:
        """value^e mod n, for 0 < value < n: the bare RSA public operation, no padding."""
        return self._lane(self._alg).run(RsaOp(self._alg, "raw", self._key, value=value))


class RSAPrivateKey(PrivateKey):
    """An RSA private key: ``sign``, ``decrypt``, and the raw operation c^d mod n."""

    __slots__ = ()
    _WRAPS = _rsa.RSAPrivateKey
    _EXPECTED = "an RSA private key"
    _PUBLIC = RSAPublicKey

    @property
    def _alg(self) -> str:
        return f"rsa-{self._key.key_size}-private"

    def sign(self, data: bytes, padding: Any, algorithm: Any) -> bytes:
        """Sign ``data`` (hashed with ``algorithm``, or ``Prehashed``) with PKCS#1 v1.5 or PSS."""
        validate.byteslike("data", data)
        lane = self._lane(self._alg)
        if lane.software_only:
            validate.rsa_padding(padding)
            check_hash(algorithm)
            out = self._key.sign(data, padding, algorithm)
            lane.count(0)
            return out
        digest, hash_alg = digest_for(data, algorithm)
        return lane.run(
            RsaOp(lane.alg, "sign", self._key, digest=digest, padding=padding, hash_alg=hash_alg)
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

    def raw_private(self, value: int) -> int:
        """value^d mod n, for 0 < value < n: the bare RSA private operation, no padding."""
        return self._lane(self._alg).run(RsaOp(self._alg, "raw", self._key, value=value))


def generate_private_key(
    public_exponent: int, key_size: int, backend: object = None, *, provider: Provider | None = None
) -> RSAPrivateKey:
    """A new RSA key (generation runs in OpenSSL)."""
    return RSAPrivateKey(_rsa.generate_private_key(public_exponent, key_size), provider=provider)


def private_key_from_numbers(
    numbers: RSAPrivateNumbers, *, provider: Provider | None = None
) -> RSAPrivateKey:
    """The key with these numbers (checked by OpenSSL)."""
    return RSAPrivateKey(numbers.private_key(), provider=provider)


def public_key_from_numbers(
    numbers: RSAPublicNumbers, *, provider: Provider | None = None
) -> RSAPublicKey:
    """The public key (e, n)."""
    return RSAPublicKey(numbers.public_key(), provider=provider)


RSAPublicKeyWithSerialization = RSAPublicKey
RSAPrivateKeyWithSerialization = RSAPrivateKey
_rsa.RSAPublicKey.register(RSAPublicKey)
_rsa.RSAPrivateKey.register(RSAPrivateKey)
