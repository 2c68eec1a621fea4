"""Elliptic-curve keys on prime curves: ECDSA and ECDH offered to engines, as in `cryptography`."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric.ec import (
    ECDH,
    ECDSA,
    SECP192R1,
    SECP224R1,
    SECP256K1,
    SECP256R1,
    SECP384R1,
    SECP521R1,
    BrainpoolP256R1,
    BrainpoolP384R1,
    BrainpoolP512R1,
    EllipticCurve,
    EllipticCurvePrivateNumbers,
    EllipticCurvePublicNumbers,
)

from cryptoffload import validate
from cryptoffload._keys import RoutedKey, check_hash, digest_for
from cryptoffload.blocks.curves import by_cryptography, short_name
from cryptoffload.ops import Op
from cryptoffload.provider import Provider

__all__ = [
    "ECDH",
    "ECDSA",
    "SECP192R1",
    "SECP224R1",
    "SECP256K1",
    "SECP256R1",
    "SECP384R1",
    "SECP521R1",
    "BrainpoolP256R1",
    "BrainpoolP384R1",
    "BrainpoolP512R1",
    "EllipticCurve",
    "EllipticCurvePrivateKey",
    "EllipticCurvePrivateNumbers",
    "EllipticCurvePublicKey",
    "EllipticCurvePublicNumbers",
    "derive_private_key",
    "generate_private_key",
    "public_key_from_numbers",
]


def _curve_name(curve: Any) -> str:
    if not isinstance(curve, _ec.EllipticCurve):
        raise TypeError(
            f"curve must be an EllipticCurve instance such as SECP256R1(), got {curve!r}"
        )
    return short_name(curve)


class EllipticCurvePublicKey(RoutedKey):
    """An EC public key: ``verify`` ECDSA signatures, and serve as an ECDH peer."""

    __slots__ = ("_name", "_validated")

    def __init__(
        self, key: _ec.EllipticCurvePublicKey, *, provider: Provider | None = None
    ) -> None:
        if not isinstance(key, _ec.EllipticCurvePublicKey):
            raise TypeError(f"expected an EC public key, got {type(key).__name__}")
        self._name = _curve_name(key.curve)
        self._validated = False
        self._init_routing(key, provider)

    def _describe(self) -> str:
        return self._name

    @classmethod
    def from_encoded_point(
        cls, curve: EllipticCurve, data: bytes, *, provider: Provider | None = None
    ) -> EllipticCurvePublicKey:
        """A public key from its SEC 1 encoding; ValueError if the point is not on the curve."""
        _curve_name(curve)
        validate.byteslike("data", data)
        return cls(
            _ec.EllipticCurvePublicKey.from_encoded_point(curve, bytes(data)), provider=provider
        )

    @property
    def curve(self) -> EllipticCurve:
        """The curve object."""
        return self._key.curve

    @property
    def key_size(self) -> int:
        """Curve size in bits."""
        return self._key.key_size

    def public_numbers(self) -> EllipticCurvePublicNumbers:
        """(x, y, curve)."""
        return self._key.public_numbers()

    def public_bytes(self, encoding: _ser.Encoding, format: _ser.PublicFormat) -> bytes:
        """Serialize, as `cryptography` does (X962 formats give the SEC 1 point)."""
        return self._key.public_bytes(encoding, format)

    def to_cryptography(self) -> _ec.EllipticCurvePublicKey:
        """The underlying `cryptography` key."""
        return self._key

    def validate(self) -> None:
        """SP 800-56A full public key validation (once per key object); ValueError if it fails."""
        if not self._validated:
            numbers = self._key.public_numbers()
            validate.ec_public_point(by_cryptography(self._key.curve), numbers.x, numbers.y)
            self._validated = True

    def verify(self, signature: bytes, data: bytes, signature_algorithm: ECDSA) -> None:
        """Raise InvalidSignature unless ``signature`` (DER) signs ``data``."""
        validate.byteslike("signature", signature)
        validate.byteslike("data", data)
        if signature_algorithm.__class__ is not ECDSA and not isinstance(
            signature_algorithm, ECDSA
        ):
            raise TypeError(f"signature_algorithm must be ECDSA(hash), got {signature_algorithm!r}")
        alg = f"ecdsa-{self._name}-verify"
        provider, direct, cell = self._route(alg)
        if direct:
            check_hash(signature_algorithm.algorithm)
            try:
                self._key.verify(signature, data, signature_algorithm)
            except InvalidSignature:
                cell.add(0)
                raise
            cell.add(0)
            return
        digest, hash_alg = digest_for(data, signature_algorithm.algorithm)
        provider.run(
            Op(
                "ecdsa",
                alg,
                "verify",
                key=self._key,
                data=digest,
                tag=bytes(signature),
                hash_alg=hash_alg,
            )
        )


class EllipticCurvePrivateKey(RoutedKey):
    """An EC private key: ECDSA ``sign`` and ECDH ``exchange``."""

    __slots__ = ("_name",)

    def __init__(
        self, key: _ec.EllipticCurvePrivateKey, *, provider: Provider | None = None
    ) -> None:
        if not isinstance(key, _ec.EllipticCurvePrivateKey):
            raise TypeError(f"expected an EC private key, got {type(key).__name__}")
        self._name = _curve_name(key.curve)
        self._init_routing(key, provider)

    def _describe(self) -> str:
        return self._name

    @property
    def curve(self) -> EllipticCurve:
        """The curve object."""
        return self._key.curve

    @property
    def key_size(self) -> int:
        """Curve size in bits."""
        return self._key.key_size

    def public_key(self) -> EllipticCurvePublicKey:
        """The matching public key (same provider)."""
        return EllipticCurvePublicKey(self._key.public_key(), provider=self._provider)

    def private_numbers(self) -> EllipticCurvePrivateNumbers:
        """The private value and the public numbers."""
        return self._key.private_numbers()

    def private_bytes(
        self,
        encoding: _ser.Encoding,
        format: _ser.PrivateFormat,
        encryption_algorithm: _ser.KeySerializationEncryption,
    ) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.private_bytes(encoding, format, encryption_algorithm)

    def to_cryptography(self) -> _ec.EllipticCurvePrivateKey:
        """The underlying `cryptography` key."""
        return self._key

    def sign(self, data: bytes, signature_algorithm: ECDSA) -> bytes:
        """A DER-encoded ECDSA signature of ``data`` (hashed, or ``Prehashed``)."""
        validate.byteslike("data", data)
        if signature_algorithm.__class__ is not ECDSA and not isinstance(
            signature_algorithm, ECDSA
        ):
            raise TypeError(f"signature_algorithm must be ECDSA(hash), got {signature_algorithm!r}")
        alg = f"ecdsa-{self._name}-sign"
        provider, direct, cell = self._route(alg)
        if direct:
            check_hash(signature_algorithm.algorithm)
            out = self._key.sign(data, signature_algorithm)
            cell.add(0)
            return out
        digest, hash_alg = digest_for(data, signature_algorithm.algorithm)
        return provider.run(Op("ecdsa", alg, "sign", key=self._key, data=digest, hash_alg=hash_alg))

    def exchange(self, algorithm: ECDH, peer_public_key: Any) -> bytes:
        """The ECDH shared secret (x coordinate) with a validated peer public key."""
        if not isinstance(algorithm, ECDH):
            raise TypeError(f"algorithm must be ECDH(), got {algorithm!r}")
        if isinstance(peer_public_key, _ec.EllipticCurvePublicKey):
            peer_public_key = EllipticCurvePublicKey(peer_public_key)
        if not isinstance(peer_public_key, EllipticCurvePublicKey):
            raise TypeError(f"peer_public_key must be an EC public key, got {peer_public_key!r}")
        if peer_public_key._name != self._name:
            raise ValueError(
                f"peer public key is on {peer_public_key._name}, this key on {self._name}"
            )
        peer_public_key.validate()
        alg = f"ecdh-{self._name}"
        provider, direct, cell = self._route(alg)
        peer = peer_public_key._key
        if direct:
            out = self._key.exchange(algorithm, peer)
            cell.add(0)
            return out
        return provider.run(Op("ecdh", alg, "exchange", key=self._key, peer=peer))


def public_key_from_numbers(
    numbers: EllipticCurvePublicNumbers, *, provider: Provider | None = None
) -> EllipticCurvePublicKey:
    """The public key (x, y) after full validation of the coordinates as given.

    Use this rather than ``numbers.public_key()`` for a peer's key: OpenSSL reduces coordinates
    modulo p, so an out-of-range coordinate would otherwise be accepted as another point.
    """
    if not isinstance(numbers, EllipticCurvePublicNumbers):
        raise TypeError(f"expected EllipticCurvePublicNumbers, got {type(numbers).__name__}")
    validate.ec_public_point(by_cryptography(numbers.curve), numbers.x, numbers.y)
    key = EllipticCurvePublicKey(numbers.public_key(), provider=provider)
    key._validated = True
    return key


def generate_private_key(
    curve: EllipticCurve, backend: object = None, *, provider: Provider | None = None
) -> EllipticCurvePrivateKey:
    """A new key on ``curve`` (generated in OpenSSL)."""
    _curve_name(curve)
    return EllipticCurvePrivateKey(_ec.generate_private_key(curve), provider=provider)


def derive_private_key(
    private_value: int,
    curve: EllipticCurve,
    backend: object = None,
    *,
    provider: Provider | None = None,
) -> EllipticCurvePrivateKey:
    """The key with this private value on ``curve``."""
    _curve_name(curve)
    if not isinstance(private_value, int) or isinstance(private_value, bool):
        raise TypeError(f"private_value must be an int, got {type(private_value).__name__}")
    return EllipticCurvePrivateKey(_ec.derive_private_key(private_value, curve), provider=provider)
