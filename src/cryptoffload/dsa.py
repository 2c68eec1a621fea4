"""DSA keys (``dsa-2048-sign``, ``dsa-2048-verify``...), offered to engines, as `cryptography`'s
``dsa``: where the installed `cryptography` deprecates DSA (51 on), reading this module's public
names warns as reading its own do; importing the module does not."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import dsa as _dsa

from cryptoffload._deprecations import DeprecatedNames, native
from cryptoffload._keys import PrivateKey, PublicKey, check_hash, digest_for
from cryptoffload._numbers import Numbers, unwrap
from cryptoffload.core import validate
from cryptoffload.core.ops import DsaOp
from cryptoffload.core.provider import Provider, checked_provider

#: `cryptography`'s own classes and functions, read without its deprecation warning.
_NativeParameterNumbers = native(_dsa, "DSAParameterNumbers")
_NativePublicNumbers = native(_dsa, "DSAPublicNumbers")
_NativePrivateNumbers = native(_dsa, "DSAPrivateNumbers")
_NativeParameters = native(_dsa, "DSAParameters")
_NativePublicKey = native(_dsa, "DSAPublicKey")
_NativePrivateKey = native(_dsa, "DSAPrivateKey")
_native_generate_parameters = native(_dsa, "generate_parameters")
_native_generate_private_key = native(_dsa, "generate_private_key")

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


class DSAParameterNumbers(Numbers):
    """A DSA group's numbers (p, q, g); ``parameters()`` gives this package's group.

    Checked and compared as `cryptography`'s (unhashable, as its are), and equal to its
    ``DSAParameterNumbers``.
    """

    __slots__ = ()
    _WRAPS = _NativeParameterNumbers
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, p: int, q: int, g: int) -> None:
        self._raw = _NativeParameterNumbers(p, q, g)

    p = property(lambda self: self._raw.p, doc="The modulus.")
    q = property(lambda self: self._raw.q, doc="The subgroup order.")
    g = property(lambda self: self._raw.g, doc="The generator.")

    def parameters(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> DSAParameters:
        """The group (checked by OpenSSL)."""
        return _DSAParameters(self._raw.parameters(), provider=provider)


class DSAPublicNumbers(Numbers):
    """A DSA public key's numbers; ``public_key()`` gives this package's key.

    ``parameter_numbers`` may be ours or `cryptography`'s; equal to its ``DSAPublicNumbers``.
    """

    __slots__ = ()
    _WRAPS = _NativePublicNumbers
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self, y: int, parameter_numbers: DSAParameterNumbers | _NativeParameterNumbers
    ) -> None:
        self._raw = _NativePublicNumbers(y, unwrap(parameter_numbers))

    y = property(lambda self: self._raw.y, doc="The public value.")

    @property
    def parameter_numbers(self) -> DSAParameterNumbers:
        """The group's numbers."""
        return _DSAParameterNumbers._wrap(self._raw.parameter_numbers)

    def public_key(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> DSAPublicKey:
        """The public key, offered to the provider in force (or ``provider``)."""
        return _DSAPublicKey(self._raw.public_key(), provider=provider)


class DSAPrivateNumbers(Numbers):
    """A DSA private key's numbers; ``private_key()`` gives this package's key.

    ``public_numbers`` may be ours or `cryptography`'s; equal to its ``DSAPrivateNumbers``.
    """

    __slots__ = ()
    _WRAPS = _NativePrivateNumbers
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, x: int, public_numbers: DSAPublicNumbers | _NativePublicNumbers) -> None:
        self._raw = _NativePrivateNumbers(x, unwrap(public_numbers))

    x = property(lambda self: self._raw.x, doc="The private value.")

    @property
    def public_numbers(self) -> DSAPublicNumbers:
        """The public numbers."""
        return _DSAPublicNumbers._wrap(self._raw.public_numbers)

    def private_key(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> DSAPrivateKey:
        """The private key (checked by OpenSSL), offered to the provider in force."""
        return _DSAPrivateKey(self._raw.private_key(), provider=provider)

    def __repr__(self) -> str:
        return "<DSAPrivateNumbers>"


class DSAParameters:
    """A DSA group (p, q, g): makes private keys."""

    __slots__ = ("_params", "_provider")

    def __init__(self, params: _NativeParameters, *, provider: Provider | None = None) -> None:
        if isinstance(params, _DSAParameters):
            params = params._params
        self._params = params
        self._provider = checked_provider(provider)

    def generate_private_key(self) -> DSAPrivateKey:
        """A new key in this group (generated in OpenSSL)."""
        return _DSAPrivateKey(self._params.generate_private_key(), provider=self._provider)

    def parameter_numbers(self) -> DSAParameterNumbers:
        """p, q and g."""
        return _DSAParameterNumbers._wrap(self._params.parameter_numbers())


DSAParametersWithNumbers = DSAParameters


class DSAPublicKey(PublicKey):
    """A DSA public key: ``verify`` is offered to engines."""

    __slots__ = ()
    _WRAPS = _NativePublicKey
    _NATIVE = _NativePublicKey
    _EXPECTED = "a DSA public key"
    _NUMBERS = DSAPublicNumbers

    def parameters(self) -> DSAParameters:
        """The group."""
        return _DSAParameters(self._key.parameters(), provider=self._provider)

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
    _WRAPS = _NativePrivateKey
    _NATIVE = _NativePrivateKey
    _EXPECTED = "a DSA private key"
    _PUBLIC = DSAPublicKey
    _NUMBERS = DSAPrivateNumbers

    def parameters(self) -> DSAParameters:
        """The group."""
        return _DSAParameters(self._key.parameters(), provider=self._provider)

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
    return _DSAParameters(_native_generate_parameters(key_size), provider=provider)


def generate_private_key(
    key_size: int, backend: object = None, *, provider: Provider | None = None
) -> DSAPrivateKey:
    """A new key in a new group of ``key_size`` bits."""
    return _DSAPrivateKey(_native_generate_private_key(key_size), provider=provider)


_NativeParameters.register(DSAParameters)
_NativePublicKey.register(DSAPublicKey)
_NativePrivateKey.register(DSAPrivateKey)

#: The package's own reads of this module's classes: never through the names that may warn.
_DSAParameterNumbers = DSAParameterNumbers
_DSAPublicNumbers = DSAPublicNumbers
_DSAPrivateNumbers = DSAPrivateNumbers
_DSAParameters = DSAParameters
_DSAPublicKey = DSAPublicKey
_DSAPrivateKey = DSAPrivateKey

_deprecated = DeprecatedNames(globals(), _dsa)
_deprecated.install(globals())
