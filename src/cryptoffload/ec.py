"""Elliptic-curve keys on prime curves: ECDSA and ECDH offered to engines, as in `cryptography`."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric.ec import (
    _CURVE_TYPES,
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
    EllipticCurveOID,
    EllipticCurveSignatureAlgorithm,
    ObjectIdentifier,
    get_curve_for_oid,
)

from cryptoffload._keys import PrivateKey, PublicKey, check_hash, digest_for
from cryptoffload._numbers import Numbers, unwrap
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.blocks.curves import by_cryptography, short_name
from cryptoffload.core import validate
from cryptoffload.core.ops import EcdhOp, EcdsaOp
from cryptoffload.core.provider import Provider, resolve

#: The asyncio helpers: loaded by the first ``*_async`` call (their import is a start-up cost).
asyncio_lane = LazyModule("cryptoffload.core.asyncio_lane")

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
    "EllipticCurveOID",
    "EllipticCurvePrivateKey",
    "EllipticCurvePrivateKeyWithSerialization",
    "EllipticCurvePrivateNumbers",
    "EllipticCurvePublicKey",
    "EllipticCurvePublicKeyWithSerialization",
    "EllipticCurvePublicNumbers",
    "EllipticCurveSignatureAlgorithm",
    "ObjectIdentifier",
    "UnsupportedAlgorithm",
    "derive_private_key",
    "generate_private_key",
    "get_curve_for_oid",
    "public_key_from_numbers",
]
#: `cryptography`'s table of curves by name (its own tests read it).
__all__ += ["_CURVE_TYPES"]
#: Curve classes a newer `cryptography` adds (brainpoolP224r1 and brainpoolP320r1 in 51).
for _name in ("BrainpoolP224R1", "BrainpoolP320R1"):
    if hasattr(_ec, _name):
        globals()[_name] = getattr(_ec, _name)
        __all__.append(_name)


def _curve_name(curve: Any) -> str:
    if not isinstance(curve, _ec.EllipticCurve):
        raise TypeError(
            f"curve must be an EllipticCurve instance such as SECP256R1(), got {curve!r}"
        )
    try:
        return short_name(curve)
    except ValueError:
        raise UnsupportedAlgorithm(
            f"Curve {curve.name} is not supported", _Reasons.UNSUPPORTED_ELLIPTIC_CURVE
        ) from None


def _check_ecdsa(signature_algorithm: Any) -> None:
    if signature_algorithm.__class__ is not ECDSA and not isinstance(signature_algorithm, ECDSA):
        raise UnsupportedAlgorithm(
            "Unsupported elliptic curve signature algorithm",
            _Reasons.UNSUPPORTED_PUBLIC_KEY_ALGORITHM,
        )


class EllipticCurvePublicNumbers(Numbers):
    """An EC public key's numbers (x, y, curve); ``public_key()`` gives this package's key.

    Checked, compared and hashed as `cryptography`'s, and equal to its
    ``EllipticCurvePublicNumbers``.
    """

    __slots__ = ()
    _WRAPS = _ec.EllipticCurvePublicNumbers

    def __init__(self, x: int, y: int, curve: EllipticCurve) -> None:
        self._raw = _ec.EllipticCurvePublicNumbers(x, y, curve)

    x = property(lambda self: self._raw.x, doc="The affine x coordinate.")
    y = property(lambda self: self._raw.y, doc="The affine y coordinate.")
    curve = property(lambda self: self._raw.curve, doc="The curve object.")

    def public_key(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> EllipticCurvePublicKey:
        """The public key (ValueError if the point is not on the curve), offered to engines.

        For a peer's key, ``public_key_from_numbers`` also refuses out-of-range coordinates.
        """
        _curve_name(self._raw.curve)
        return EllipticCurvePublicKey(self._raw.public_key(), provider=provider)


class EllipticCurvePrivateNumbers(Numbers):
    """An EC private key's numbers; ``private_key()`` gives this package's key.

    Checked, compared and hashed as `cryptography`'s, and equal to its
    ``EllipticCurvePrivateNumbers``; ``public_numbers`` may be either class.
    """

    __slots__ = ()
    _WRAPS = _ec.EllipticCurvePrivateNumbers

    def __init__(
        self,
        private_value: int,
        public_numbers: EllipticCurvePublicNumbers | _ec.EllipticCurvePublicNumbers,
    ) -> None:
        self._raw = _ec.EllipticCurvePrivateNumbers(private_value, unwrap(public_numbers))

    private_value = property(lambda self: self._raw.private_value, doc="The private scalar.")

    @property
    def public_numbers(self) -> EllipticCurvePublicNumbers:
        """The public numbers (x, y, curve)."""
        return EllipticCurvePublicNumbers._wrap(self._raw.public_numbers)

    def private_key(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> EllipticCurvePrivateKey:
        """The private key (ValueError if the numbers do not match), offered to engines."""
        _curve_name(self._raw.public_numbers.curve)
        return EllipticCurvePrivateKey(self._raw.private_key(), provider=provider)

    def __repr__(self) -> str:
        return "<EllipticCurvePrivateNumbers>"


class EllipticCurvePublicKey(PublicKey):
    """An EC public key: ``verify`` ECDSA signatures, and serve as an ECDH peer."""

    __slots__ = ("_domain", "_validated")
    _WRAPS = _ec.EllipticCurvePublicKey
    _NATIVE = _ec.EllipticCurvePublicKey
    _EXPECTED = "an EC public key"
    _NUMBERS = EllipticCurvePublicNumbers

    def __init__(
        self, key: _ec.EllipticCurvePublicKey, *, provider: Provider | None = None
    ) -> None:
        super().__init__(key, provider=provider)
        self._domain = _curve_name(key.curve)
        self._validated = False

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

    def validate(self) -> None:
        """SP 800-56A full public key validation (once per key object); ValueError if it fails."""
        if not self._validated:
            numbers = self._key.public_numbers()
            validate.ec_public_point(by_cryptography(self._key.curve), numbers.x, numbers.y)
            self._validated = True

    def verify(self, signature: bytes, data: bytes, signature_algorithm: ECDSA) -> None:
        """Raise InvalidSignature unless ``signature`` (DER) signs ``data``."""
        validate.byteslike("data", data)
        _check_ecdsa(signature_algorithm)
        lane = self._lane(f"ecdsa-{self._domain}-verify")
        if lane.software_only:
            validate.byteslike("signature", signature)
            check_hash(signature_algorithm.algorithm)
            try:
                self._key.verify(signature, data, signature_algorithm)
            except InvalidSignature:
                lane.count(0)
                raise
            lane.count(0)
            return
        lane.run(self._verify_op(lane, signature, data, signature_algorithm))

    def _verify_op(self, lane: Any, signature: Any, data: Any, signature_algorithm: Any) -> EcdsaOp:
        digest, hash_alg = digest_for(data, signature_algorithm.algorithm)
        return EcdsaOp(lane.alg, "verify", self._key, digest, hash_alg, signature=signature)

    async def verify_async(self, signature: bytes, data: bytes, signature_algorithm: ECDSA) -> None:
        """:meth:`verify`, awaited (see :mod:`cryptoffload.core.asyncio_lane`): InvalidSignature
        and every other error as the sync call, the same counts."""
        lane = self._lane(f"ecdsa-{self._domain}-verify")

        def build() -> EcdsaOp:
            validate.byteslike("data", data)
            _check_ecdsa(signature_algorithm)
            return self._verify_op(lane, signature, data, signature_algorithm)

        await asyncio_lane.offload(lane, build, self.verify, signature, data, signature_algorithm)


class EllipticCurvePrivateKey(PrivateKey):
    """An EC private key: ECDSA ``sign`` and ECDH ``exchange``."""

    __slots__ = ("_domain",)
    _WRAPS = _ec.EllipticCurvePrivateKey
    _NATIVE = _ec.EllipticCurvePrivateKey
    _EXPECTED = "an EC private key"
    _PUBLIC = EllipticCurvePublicKey
    _NUMBERS = EllipticCurvePrivateNumbers
    _WHERE = "on"

    def __init__(
        self, key: _ec.EllipticCurvePrivateKey, *, provider: Provider | None = None
    ) -> None:
        super().__init__(key, provider=provider)
        self._domain = _curve_name(key.curve)

    @property
    def curve(self) -> EllipticCurve:
        """The curve object."""
        return self._key.curve

    def sign(self, data: bytes, signature_algorithm: ECDSA) -> bytes:
        """A DER-encoded ECDSA signature of ``data`` (hashed, or ``Prehashed``).

        ``ECDSA(hash, deterministic_signing=True)`` derives the nonce from the key and the
        digest (RFC 6979) on every path; an engine that cannot declines.
        """
        # The checks and the lane's lookup inline (the commonest arguments tested first): on
        # the software path they are all this method adds to OpenSSL's signature.
        if data.__class__ is not bytes:
            validate.byteslike("data", data)
        if signature_algorithm.__class__ is not ECDSA:
            _check_ecdsa(signature_algorithm)
        lane = resolve(self._provider).lane(f"ecdsa-{self._domain}-sign")
        if lane.software_only:
            check_hash(signature_algorithm.algorithm)
            out = self._key.sign(data, signature_algorithm)
            lane.count(0)
            return out
        return lane.run(self._sign_op(lane, data, signature_algorithm))

    def _sign_op(self, lane: Any, data: Any, signature_algorithm: Any) -> EcdsaOp:
        digest, hash_alg = digest_for(data, signature_algorithm.algorithm)
        deterministic = bool(signature_algorithm.deterministic_signing)
        return EcdsaOp(lane.alg, "sign", self._key, digest, hash_alg, deterministic=deterministic)

    async def sign_async(self, data: bytes, signature_algorithm: ECDSA) -> bytes:
        """:meth:`sign`, awaited (see :mod:`cryptoffload.core.asyncio_lane`): the same errors and
        counts."""
        lane = self._lane(f"ecdsa-{self._domain}-sign")

        def build() -> EcdsaOp:
            validate.byteslike("data", data)
            _check_ecdsa(signature_algorithm)
            return self._sign_op(lane, data, signature_algorithm)

        return await asyncio_lane.offload(lane, build, self.sign, data, signature_algorithm)

    def exchange(self, algorithm: ECDH, peer_public_key: Any) -> bytes:
        """The ECDH shared secret (x coordinate) with a validated peer public key."""
        peer_public_key = self._exchange_peer(algorithm, peer_public_key)
        lane = self._lane(f"ecdh-{self._domain}")
        peer = peer_public_key._key
        if lane.software_only:
            peer_public_key.validate()
            out = self._key.exchange(algorithm, peer)
            lane.count(0)
            return out
        return lane.run(EcdhOp(lane.alg, "exchange", self._key, peer))

    def _exchange_peer(self, algorithm: Any, peer_public_key: Any) -> EllipticCurvePublicKey:
        """The peer as this package's key on our curve, once ``algorithm`` is ECDH."""
        if not isinstance(algorithm, ECDH):
            raise UnsupportedAlgorithm(
                "Unsupported EC exchange algorithm", _Reasons.UNSUPPORTED_EXCHANGE_ALGORITHM
            )
        return self._peer(peer_public_key)

    async def exchange_async(self, algorithm: ECDH, peer_public_key: Any) -> bytes:
        """:meth:`exchange`, awaited (see :mod:`cryptoffload.core.asyncio_lane`): the same secret,
        errors and counts."""
        lane = self._lane(f"ecdh-{self._domain}")

        def build() -> EcdhOp:
            peer = self._exchange_peer(algorithm, peer_public_key)
            return EcdhOp(lane.alg, "exchange", self._key, peer._key)

        return await asyncio_lane.offload(lane, build, self.exchange, algorithm, peer_public_key)


def public_key_from_numbers(
    numbers: EllipticCurvePublicNumbers | _ec.EllipticCurvePublicNumbers,
    *,
    provider: Provider | None = None,
) -> EllipticCurvePublicKey:
    """The public key (x, y) after full validation of the coordinates as given.

    Use this rather than ``numbers.public_key()`` for a peer's key: OpenSSL reduces coordinates
    modulo p, so an out-of-range coordinate would otherwise be accepted as another point.
    """
    numbers = unwrap(numbers)
    if not isinstance(numbers, _ec.EllipticCurvePublicNumbers):
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


EllipticCurvePublicKeyWithSerialization = EllipticCurvePublicKey
EllipticCurvePrivateKeyWithSerialization = EllipticCurvePrivateKey
_ec.EllipticCurvePublicKey.register(EllipticCurvePublicKey)
_ec.EllipticCurvePrivateKey.register(EllipticCurvePrivateKey)
