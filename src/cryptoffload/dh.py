"""Finite-field Diffie-Hellman as `cryptography`'s ``dh``, offered to engines; software on GMP.

The RFC 7919 groups (ffdhe2048..ffdhe8192) and any group `cryptography` accepts (p prime of 512
bits or more; a safe prime, or a prime-order subgroup q given). cryptoffload does not use
`cryptography`'s FFDH API, which is deprecated upstream: keys, agreement and serialization run
here (:mod:`cryptoffload.blocks.ffdh`), so nothing warns.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import dh as _c_dh
from cryptography.utils import CryptographyDeprecationWarning

from cryptoffload._deprecations import native
from cryptoffload._keys import PrivateKey, PublicKey
from cryptoffload.blocks import der, ffdh, pkcs8
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS, Group, group_for_prime
from cryptoffload.core import validate
from cryptoffload.core.ops import DhOp
from cryptoffload.core.provider import Provider, checked_provider

__all__ = [
    "GROUPS",
    "DHParameterNumbers",
    "DHParameters",
    "DHParametersWithSerialization",
    "DHPrivateKey",
    "DHPrivateKeyWithSerialization",
    "DHPrivateNumbers",
    "DHPublicKey",
    "DHPublicKeyWithSerialization",
    "DHPublicNumbers",
    "generate_parameters",
    "generate_private_key",
    "group",
    "quiet_ffdh_warning",
]

GROUPS = tuple(FFDHE_GROUPS)

#: The start of the warning `cryptography` (50 and later) gives for any use of its FFDH API.
FFDH_WARNING = r"Diffie-Hellman over finite fields \(FFDH\) is deprecated"


@contextlib.contextmanager
def quiet_ffdh_warning() -> Iterator[None]:
    """Hide `cryptography`'s FFDH deprecation warning, and no other, inside the block.

    For code that still calls `cryptography`'s FFDH API itself; cryptoffload no longer does.
    Like ``warnings.catch_warnings``, which it uses, it swaps the process's filter list: keep it
    around single calls, never around user code.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=FFDH_WARNING, category=CryptographyDeprecationWarning
        )
        yield


def _int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer")


class DHParameterNumbers:
    """A group's numbers: modulus p, generator g, and optionally the subgroup order q."""

    __slots__ = ("_g", "_p", "_q")

    def __init__(self, p: int, g: int, q: int | None = None) -> None:
        _int("p", p)
        _int("g", g)
        if q is not None:
            _int("q", q)
        if g < 2:
            raise ValueError("DH generator must be 2 or greater")
        if p.bit_length() < ffdh.MIN_MODULUS_BITS:
            raise ValueError(f"p (modulus) must be at least {ffdh.MIN_MODULUS_BITS}-bit")
        self._p, self._g, self._q = p, g, q

    p = property(lambda self: self._p, doc="The modulus.")
    g = property(lambda self: self._g, doc="The generator.")
    q = property(lambda self: self._q, doc="The subgroup order, or None.")

    def _params(self) -> ffdh.Params:
        return ffdh.Params(self._p, self._g, self._q)

    def parameters(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> DHParameters:
        """The group, after DH_check's tests (ValueError "Invalid DH parameters")."""
        params = self._params()
        ffdh.check_parameters(params)
        return DHParameters(params, provider=provider)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DHParameterNumbers):
            return NotImplemented
        return (self._p, self._g, self._q) == (other._p, other._g, other._q)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<DHParameterNumbers({self._p.bit_length()}-bit p, g={self._g})>"


class DHPublicNumbers:
    """A public value y and its group's numbers."""

    __slots__ = ("_parameter_numbers", "_y")

    def __init__(self, y: int, parameter_numbers: DHParameterNumbers) -> None:
        _int("y", y)
        if not isinstance(parameter_numbers, DHParameterNumbers):
            raise TypeError("parameter_numbers must be an instance of DHParameterNumbers")
        self._y, self._parameter_numbers = y, parameter_numbers

    y = property(lambda self: self._y, doc="The public value.")
    parameter_numbers = property(lambda self: self._parameter_numbers, doc="The group's numbers.")

    def public_key(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> DHPublicKey:
        """The public key (its value is checked against the group when it is used)."""
        params = self._parameter_numbers._params()
        ffdh.check_parameters(params)
        return DHPublicKey(ffdh.PublicKey(params, self._y), provider=provider)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DHPublicNumbers):
            return NotImplemented
        return self._y == other._y and self._parameter_numbers == other._parameter_numbers

    __hash__ = None  # type: ignore[assignment]


class DHPrivateNumbers:
    """A private value x and the public numbers that go with it."""

    __slots__ = ("_public_numbers", "_x")

    def __init__(self, x: int, public_numbers: DHPublicNumbers) -> None:
        _int("x", x)
        if not isinstance(public_numbers, DHPublicNumbers):
            raise TypeError("public_numbers must be an instance of DHPublicNumbers")
        self._x, self._public_numbers = x, public_numbers

    x = property(lambda self: self._x, doc="The private value.")
    public_numbers = property(lambda self: self._public_numbers, doc="The public numbers.")

    def private_key(
        self, backend: object = None, *, provider: Provider | None = None
    ) -> DHPrivateKey:
        """The private key (x and y taken as given, as `cryptography` takes them)."""
        params = self._public_numbers.parameter_numbers._params()
        ffdh.check_parameters(params)
        raw = ffdh.PrivateKey(params, self._x, self._public_numbers.y)
        return DHPrivateKey(raw, provider=provider)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DHPrivateNumbers):
            return NotImplemented
        return self._x == other._x and self._public_numbers == other._public_numbers

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "<DHPrivateNumbers>"


def _numbers(params: ffdh.Params) -> DHParameterNumbers:
    numbers = DHParameterNumbers.__new__(DHParameterNumbers)
    numbers._p, numbers._g, numbers._q = params.p, params.g, params.q
    return numbers


def _check_types(encoding: Any, format: Any, format_class: type) -> None:
    if not isinstance(encoding, _ser.Encoding):
        raise TypeError("encoding must be an item from the Encoding enum")
    if not isinstance(format, format_class):
        raise TypeError(f"format must be an item from the {format_class.__name__} enum")


def _encode(label: str, data: bytes, encoding: _ser.Encoding) -> bytes:
    if encoding is _ser.Encoding.PEM:
        return der.pem(label, data)
    if encoding is _ser.Encoding.DER:
        return data
    raise ValueError("DH keys serialize as PEM or DER only")


class DHParameters:
    """A validated group: makes private keys, and serializes as PKCS #3 (X9.42 with q)."""

    __slots__ = ("_params", "_provider")

    def __init__(self, params: ffdh.Params, *, provider: Provider | None = None) -> None:
        self._params = params
        self._provider = checked_provider(provider)

    def generate_private_key(self) -> DHPrivateKey:
        """A new key in this group (private value per RFC 7919's short-exponent sizes)."""
        return DHPrivateKey(ffdh.new_private_key(self._params), provider=self._provider)

    def parameter_numbers(self) -> DHParameterNumbers:
        """The group's numbers."""
        return _numbers(self._params)

    def parameter_bytes(self, encoding: _ser.Encoding, format: _ser.ParameterFormat) -> bytes:
        """PKCS #3 ``DH PARAMETERS`` (``X9.42 DH PARAMETERS`` when q is known), PEM or DER."""
        _check_types(encoding, format, _ser.ParameterFormat)
        label, data = ffdh.params_der(self._params)
        if encoding not in (_ser.Encoding.PEM, _ser.Encoding.DER):
            raise TypeError("encoding must be Encoding.DER or Encoding.PEM")
        return _encode(label, data, encoding)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DHParameters):
            return NotImplemented
        return self._params == other._params

    def __hash__(self) -> int:
        return hash(self._params)

    def __repr__(self) -> str:
        return f"<DHParameters {self._params.bits} bits>"


DHParametersWithSerialization = DHParameters


def _params_of(numbers: Any) -> ffdh.Params:
    """The group of DH parameter numbers (ours or `cryptography`'s)."""
    return ffdh.Params(numbers.p, numbers.g, numbers.q)


def group(name: str) -> Group:
    """The named group's parameters (p, g, q); ValueError for other names."""
    try:
        return FFDHE_GROUPS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown DH group {name!r}; expected one of {', '.join(GROUPS)}"
        ) from None


def _domain(params: ffdh.Params) -> str:
    """The algorithm name of a group: ``ffdhe2048`` for an RFC 7919 group, else ``dh-<bits>``."""
    found = group_for_prime(params.p)
    if found is not None and params.g == found.g and params.q in (None, found.q):
        return found.name
    return f"dh-{params.bits}"


class DHPublicKey(PublicKey):
    """A DH public value y in a group."""

    __slots__ = ("_domain", "_validated")
    _WRAPS = ffdh.PublicKey
    _EXPECTED = "a DH public key"

    def __init__(self, key: ffdh.PublicKey, *, provider: Provider | None = None) -> None:
        super().__init__(key, provider=provider)
        self._domain = _domain(self._key.params)
        self._validated = False

    @classmethod
    def _from_native(cls, key: Any) -> ffdh.PublicKey:
        with quiet_ffdh_warning():
            numbers = key.public_numbers()
        return ffdh.PublicKey(_params_of(numbers.parameter_numbers), numbers.y)

    @classmethod
    def from_public_value(
        cls, group_name: str, y: int | bytes, *, provider: Provider | None = None
    ) -> DHPublicKey:
        """The public key with value ``y`` (an int, or big-endian bytes as TLS carries it)."""
        if isinstance(y, (bytes, bytearray, memoryview)):
            y = int.from_bytes(y, "big")
        if not isinstance(y, int) or isinstance(y, bool):
            raise TypeError(f"y must be an int or bytes, got {type(y).__name__}")
        g = group(group_name)
        return cls(ffdh.PublicKey(ffdh.Params(g.p, g.g), y), provider=provider)

    @property
    def group(self) -> str:
        """The algorithm name of the group: ``ffdhe2048``..., or ``dh-<bits>`` for others."""
        return self._domain

    def public_value(self) -> bytes:
        """y as big-endian bytes the length of p (the TLS encoding)."""
        return self._key.y.to_bytes((self._key.key_size + 7) // 8, "big")

    def validate(self) -> None:
        """SP 800-56A public value checks (once per key object); ValueError if they fail."""
        if not self._validated:
            validate.ffc_peer(self._key.params, self._key)
            self._validated = True

    def parameters(self) -> DHParameters:
        """The group."""
        return DHParameters(self._key.params, provider=self._provider)

    def public_numbers(self) -> DHPublicNumbers:
        """y and the group's numbers."""
        return DHPublicNumbers(self._key.y, _numbers(self._key.params))

    def public_bytes(self, encoding: _ser.Encoding, format: _ser.PublicFormat) -> bytes:
        """SubjectPublicKeyInfo, PEM or DER."""
        _check_types(encoding, format, _ser.PublicFormat)
        if format is not _ser.PublicFormat.SubjectPublicKeyInfo:
            raise ValueError("DH public keys support only SubjectPublicKeyInfo serialization")
        return _encode("PUBLIC KEY", ffdh.public_key_der(self._key), encoding)


DHPublicKeyWithSerialization = DHPublicKey


class DHPrivateKey(PrivateKey):
    """A DH private key; ``exchange`` is offered to engines (software: GMP, constant time)."""

    __slots__ = ("_domain",)
    _WRAPS = ffdh.PrivateKey
    _EXPECTED = "a DH private key"
    _PUBLIC = DHPublicKey
    _WHERE = "in"

    def __init__(self, key: ffdh.PrivateKey, *, provider: Provider | None = None) -> None:
        super().__init__(key, provider=provider)
        self._domain = _domain(self._key.params)

    @classmethod
    def _from_native(cls, key: Any) -> ffdh.PrivateKey:
        with quiet_ffdh_warning():
            numbers = key.private_numbers()
        public = numbers.public_numbers
        return ffdh.PrivateKey(_params_of(public.parameter_numbers), numbers.x, public.y)

    @property
    def group(self) -> str:
        """The algorithm name of the group: ``ffdhe2048``..., or ``dh-<bits>`` for others."""
        return self._domain

    def public_key(self) -> DHPublicKey:
        """The matching public key (same provider)."""
        return DHPublicKey(self._key.public(), provider=self._provider)

    def parameters(self) -> DHParameters:
        """The group."""
        return DHParameters(self._key.params, provider=self._provider)

    def private_numbers(self) -> DHPrivateNumbers:
        """x, y and the group's numbers."""
        key = self._key
        return DHPrivateNumbers(key.x, DHPublicNumbers(key.y, _numbers(key.params)))

    def private_bytes(
        self,
        encoding: _ser.Encoding,
        format: _ser.PrivateFormat,
        encryption_algorithm: _ser.KeySerializationEncryption,
    ) -> bytes:
        """PKCS #8, PEM or DER; ``BestAvailableEncryption`` seals it with PBES2 (AES-256)."""
        _check_types(encoding, format, _ser.PrivateFormat)
        if not isinstance(encryption_algorithm, _ser.KeySerializationEncryption):
            raise TypeError("Encryption algorithm must be a KeySerializationEncryption instance")
        if format is not _ser.PrivateFormat.PKCS8:
            raise ValueError("DH private keys support only PKCS8 serialization")
        if encoding not in (_ser.Encoding.PEM, _ser.Encoding.DER):
            raise ValueError("DH private keys serialize as PEM or DER only")
        data = ffdh.private_key_der(self._key)
        if isinstance(encryption_algorithm, _ser.NoEncryption):
            return _encode("PRIVATE KEY", data, encoding)
        if isinstance(encryption_algorithm, _ser.BestAvailableEncryption):
            sealed = pkcs8.encrypt(data, encryption_algorithm.password)
            return _encode("ENCRYPTED PRIVATE KEY", sealed, encoding)
        raise ValueError("Unsupported encryption type")

    def exchange(self, peer_public_key: Any) -> bytes:
        """The shared secret, padded to the length of p, with a validated peer value."""
        peer_public_key = self._peer(peer_public_key)
        lane = self._lane(self._domain)
        peer = peer_public_key._key
        if lane.software_only:
            validate.ffc_same_group(self._key.params, peer.params)
            peer_public_key.validate()
            out = ffdh.agree(self._key, peer.y)
            lane.count(0)
            return out
        return lane.run(DhOp(lane.alg, "exchange", self._key, peer))

    def _peer(self, peer: Any) -> DHPublicKey:
        if isinstance(peer, ffdh.PublicKey):
            peer = DHPublicKey(peer)
        try:
            peer = DHPublicKey._adopt(peer, self._provider)
        except TypeError:
            raise TypeError(
                f"peer_public_key must be a DH public key, got {type(peer).__name__}"
            ) from None
        if peer._key.params.p != self._key.params.p or peer._key.params.g != self._key.params.g:
            raise ValueError("peer public key is in another DH group")
        return peer


DHPrivateKeyWithSerialization = DHPrivateKey


def generate_parameters(
    generator: int, key_size: int, backend: object = None, *, provider: Provider | None = None
) -> DHParameters:
    """A new safe-prime group (generator 2 or 5, at least 512 bits); slow for large sizes."""
    return DHParameters(ffdh.generate_parameters(generator, key_size), provider=provider)


def generate_private_key(group_name: str, *, provider: Provider | None = None) -> DHPrivateKey:
    """A new private key in the named RFC 7919 group."""
    g = group(group_name)
    return DHParameters(ffdh.Params(g.p, g.g), provider=provider).generate_private_key()


#: As `cryptography`'s own module has them (its tests read them): the key classes under names
#: that never warn. cryptoffload's FFDH is not deprecated: its public names do not warn either.
_DHPublicKey = DHPublicKey
_DHPrivateKey = DHPrivateKey

# Type checks against cryptography's DH interfaces hold for these keys (as for its own); the
# interfaces are read without the FFDH deprecation warning that reading their names gives.
for _ours, _name in (
    (DHPrivateKey, "DHPrivateKey"),
    (DHPublicKey, "DHPublicKey"),
    (DHParameters, "DHParameters"),
):
    native(_c_dh, _name).register(_ours)
# And `cryptography`'s own DH keys count as ours (read into ffdh records when taken).
DHPublicKey._NATIVE = native(_c_dh, "DHPublicKey")
DHPrivateKey._NATIVE = native(_c_dh, "DHPrivateKey")
