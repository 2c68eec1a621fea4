"""DSA keys (``dsa-2048-sign``, ``dsa-2048-verify``...), offered to engines, as `cryptography`'s
``dsa``."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import dsa as _dsa
from cryptography.hazmat.primitives.asymmetric.dsa import (
    DSAParameterNumbers,
    DSAPrivateNumbers,
    DSAPublicNumbers,
)

from cryptoffload import validate
from cryptoffload._keys import PrivateKey, PublicKey, check_hash, digest_for
from cryptoffload.ops import DsaOp
from cryptoffload.provider import Provider

__all__ = [
    "DSAParameterNumbers",
    "DSAParameters",
    "DSAParametersWithNumbers",
    "DSAPrivateKey",
    "DSAPrivateKeyWithSerialization",
    "DSAPrivateNumbers",
    "DSAPublicKey",
    "DSAPublicKeyWithSerialization",
    "DSAPublicNumbers",
    "generate_parameters",
    "generate_private_key",
]


class DSAParameters:
    """A DSA group (p, q, g): makes private keys."""

    __slots__ = ("_params", "_provider")

    def __init__(self, params: _dsa.DSAParameters, *, provider: Provider | None = None) -> None:
        if isinstance(params, DSAParameters):
            params = params._params
        self._params = params
        self._provider = provider

    def generate_private_key(self) -> DSAPrivateKey:
        """A new key in this group (generated in OpenSSL)."""
        return DSAPrivateKey(self._params.generate_private_key(), provider=self._provider)

    def parameter_numbers(self) -> DSAParameterNumbers:
        """p, q and g."""
        return self._params.parameter_numbers()


DSAParametersWithNumbers = DSAParameters


class DSAPublicKey(PublicKey):
    """A DSA public key: ``verify`` is offered to engines."""

    __slots__ = ()
    _WRAPS = _dsa.DSAPublicKey
    _EXPECTED = "a DSA public key"

    def parameters(self) -> DSAParameters:
        """The group."""
        return DSAParameters(self._key.parameters(), provider=self._provider)

    def public_bytes(self, encoding: _ser.Encoding, format: _ser.PublicFormat) -> bytes:
        """Serialize, as `cryptography` does."""
        return self._key.public_bytes(encoding, format)

    def verify(self, signature: bytes, data: bytes, algorithm: Any) -> None:
        """Raise InvalidSignature unless ``signature`` (DER) signs ``data``."""
        validate.byteslike("signature", signature)
        validate.byteslike("data", data)
        lane = self._lane(f"dsa-{self._key.key_size}-verify")
        if lane.software_only:
            check_hash(algorithm)
            try:
                self._key.verify(signature, data, algorithm)
            finally:
                lane.count(0)
            return
        digest, hash_alg = digest_for(data, algorithm)
        lane.run(DsaOp(lane.alg, "verify", self._key, digest, hash_alg, signature=signature))


DSAPublicKeyWithSerialization = DSAPublicKey


class DSAPrivateKey(PrivateKey):
    """A DSA private key: ``sign`` is offered to engines."""

    __slots__ = ()
    _WRAPS = _dsa.DSAPrivateKey
    _EXPECTED = "a DSA private key"
    _PUBLIC = DSAPublicKey

    def parameters(self) -> DSAParameters:
        """The group."""
        return DSAParameters(self._key.parameters(), provider=self._provider)

    def sign(self, data: bytes, algorithm: Any) -> bytes:
        """A DER-encoded DSA signature of ``data`` (hashed, or ``Prehashed``)."""
        validate.byteslike("data", data)
        lane = self._lane(f"dsa-{self._key.key_size}-sign")
        if lane.software_only:
            check_hash(algorithm)
            out = self._key.sign(data, algorithm)
            lane.count(0)
            return out
        digest, hash_alg = digest_for(data, algorithm)
        return lane.run(DsaOp(lane.alg, "sign", self._key, digest, hash_alg))


DSAPrivateKeyWithSerialization = DSAPrivateKey


def generate_parameters(
    key_size: int, backend: object = None, *, provider: Provider | None = None
) -> DSAParameters:
    """A new group of ``key_size`` bits (1024, 2048, 3072 or 4096; generated in OpenSSL)."""
    return DSAParameters(_dsa.generate_parameters(key_size), provider=provider)


def generate_private_key(
    key_size: int, backend: object = None, *, provider: Provider | None = None
) -> DSAPrivateKey:
    """A new key in a new group of ``key_size`` bits."""
    return DSAPrivateKey(_dsa.generate_private_key(key_size), provider=provider)


_dsa.DSAParameters.register(DSAParameters)
_dsa.DSAPublicKey.register(DSAPublicKey)
_dsa.DSAPrivateKey.register(DSAPrivateKey)
