"""RSA keys whose private and public operations are offered to engines; padding in software."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateNumbers, RSAPublicNumbers

from cryptoffload import validate
from cryptoffload._keys import RoutedKey, check_hash, digest_for
from cryptoffload.blocks import pkcs1
from cryptoffload.names import hash_name
from cryptoffload.ops import Op
from cryptoffload.provider import Provider

__all__ = [
    "RSAPrivateKey",
    "RSAPrivateNumbers",
    "RSAPublicKey",
    "RSAPublicNumbers",
    "generate_private_key",
    "padding",
    "private_key_from_numbers",
    "public_key_from_numbers",
]


def _check_padding(pad: Any) -> None:
    if not isinstance(pad, padding.AsymmetricPadding):
        raise TypeError(f"padding must be PKCS1v15(), PSS(...) or OAEP(...), got {pad!r}")
    if isinstance(pad, padding.OAEP):
        # OpenSSL takes OAEP with SHA-1/SHA-2 only; an engine padding in Python must not take more.
        for alg in pkcs1.oaep_params(pad)[:2]:
            if hash_name(alg) not in ("sha1", "sha224", "sha256", "sha384", "sha512"):
                raise UnsupportedAlgorithm(
                    f"OAEP takes SHA-1 or SHA-224/256/384/512, got {alg.name}",
                    _Reasons.UNSUPPORTED_PADDING,
                )


def _check_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")


class RSAPublicKey(RoutedKey):
    """An RSA public key: ``verify``, ``encrypt``, and the raw operation m^e mod n."""

    __slots__ = ()

    def __init__(self, key: _rsa.RSAPublicKey, *, provider: Provider | None = None) -> None:
        if not isinstance(key, _rsa.RSAPublicKey):
            raise TypeError(f"expected an RSA public key, got {type(key).__name__}")
        self._init_routing(key, provider)

    def _describe(self) -> str:
        return f"{self._key.key_size} bits"

    @property
    def key_size(self) -> int:
        """Modulus size in bits."""
        return self._key.key_size

    @property
    def _alg(self) -> str:
        return f"rsa-{self._key.key_size}-public"

    def public_numbers(self) -> RSAPublicNumbers:
        """(e, n)."""
        return self._key.public_numbers()

    def public_bytes(self, encoding: _ser.Encoding, format: _ser.PublicFormat) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.public_bytes(encoding, format)

    def to_cryptography(self) -> _rsa.RSAPublicKey:
        """The underlying `cryptography` key."""
        return self._key

    def verify(self, signature: bytes, data: bytes, padding: Any, algorithm: Any) -> None:
        """Raise InvalidSignature unless ``signature`` signs ``data`` hashed with ``algorithm``."""
        validate.byteslike("signature", signature)
        validate.byteslike("data", data)
        _check_padding(padding)
        alg = self._alg
        provider, direct, cell = self._route(alg)
        if direct:
            check_hash(algorithm)
            try:
                pkcs1.check_signature_length(signature, self._key.key_size)
                self._key.verify(signature, data, padding, algorithm)
            except InvalidSignature:
                cell.add(0)
                raise
            cell.add(0)
            return
        digest, hash_alg = digest_for(data, algorithm)
        provider.run(
            Op(
                "rsa",
                alg,
                "verify",
                key=self._key,
                data=digest,
                tag=bytes(signature),
                padding=padding,
                hash_alg=hash_alg,
            )
        )

    def encrypt(self, plaintext: bytes, padding: Any) -> bytes:
        """Encrypt a short message with OAEP or PKCS#1 v1.5 padding."""
        validate.byteslike("plaintext", plaintext)
        _check_padding(padding)
        alg = self._alg
        provider, direct, cell = self._route(alg)
        if direct:
            out = self._key.encrypt(plaintext, padding)
            cell.add(0)
            return out
        return provider.run(
            Op("rsa", alg, "encrypt", key=self._key, data=bytes(plaintext), padding=padding)
        )

    def raw_public(self, value: int) -> int:
        """value^e mod n, for 0 < value < n: the bare RSA public operation, no padding."""
        _check_int("value", value)
        return self._raw(value)

    def _raw(self, value: int) -> int:
        provider, _, _ = self._route(self._alg)
        return provider.run(Op("rsa", self._alg, "raw", key=self._key, data=value))


class RSAPrivateKey(RoutedKey):
    """An RSA private key: ``sign``, ``decrypt``, and the raw operation c^d mod n."""

    __slots__ = ()

    def __init__(self, key: _rsa.RSAPrivateKey, *, provider: Provider | None = None) -> None:
        if not isinstance(key, _rsa.RSAPrivateKey):
            raise TypeError(f"expected an RSA private key, got {type(key).__name__}")
        self._init_routing(key, provider)

    def _describe(self) -> str:
        return f"{self._key.key_size} bits"

    @property
    def key_size(self) -> int:
        """Modulus size in bits."""
        return self._key.key_size

    @property
    def _alg(self) -> str:
        return f"rsa-{self._key.key_size}-private"

    def public_key(self) -> RSAPublicKey:
        """The matching public key (same provider)."""
        return RSAPublicKey(self._key.public_key(), provider=self._provider)

    def private_numbers(self) -> RSAPrivateNumbers:
        """p, q, d, dmp1, dmq1, iqmp and the public numbers."""
        return self._key.private_numbers()

    def private_bytes(
        self,
        encoding: _ser.Encoding,
        format: _ser.PrivateFormat,
        encryption_algorithm: _ser.KeySerializationEncryption,
    ) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.private_bytes(encoding, format, encryption_algorithm)

    def to_cryptography(self) -> _rsa.RSAPrivateKey:
        """The underlying `cryptography` key."""
        return self._key

    def sign(self, data: bytes, padding: Any, algorithm: Any) -> bytes:
        """Sign ``data`` (hashed with ``algorithm``, or ``Prehashed``) with PKCS#1 v1.5 or PSS."""
        validate.byteslike("data", data)
        _check_padding(padding)
        alg = self._alg
        provider, direct, cell = self._route(alg)
        if direct:
            check_hash(algorithm)
            out = self._key.sign(data, padding, algorithm)
            cell.add(0)
            return out
        digest, hash_alg = digest_for(data, algorithm)
        return provider.run(
            Op("rsa", alg, "sign", key=self._key, data=digest, padding=padding, hash_alg=hash_alg)
        )

    def decrypt(self, ciphertext: bytes, padding: Any) -> bytes:
        """Decrypt OAEP or PKCS#1 v1.5; ValueError when the ciphertext is not valid."""
        validate.byteslike("ciphertext", ciphertext)
        _check_padding(padding)
        alg = self._alg
        provider, direct, cell = self._route(alg)
        if direct:
            try:
                return self._key.decrypt(ciphertext, padding)
            finally:
                cell.add(0)
        return provider.run(
            Op("rsa", alg, "decrypt", key=self._key, data=bytes(ciphertext), padding=padding)
        )

    def raw_private(self, value: int) -> int:
        """value^d mod n, for 0 < value < n: the bare RSA private operation, no padding."""
        _check_int("value", value)
        provider, _, _ = self._route(self._alg)
        return provider.run(Op("rsa", self._alg, "raw", key=self._key, data=value))


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
