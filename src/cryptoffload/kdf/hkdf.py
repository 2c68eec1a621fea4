"""HKDF (RFC 5869) on cryptoffload's HMAC, as `cryptography`'s ``kdf.hkdf``: each HMAC an op."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.hashes import HashAlgorithm
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction
from cryptography.hazmat.primitives.kdf.hkdf import HKDF as _OpenSSLHKDF

from cryptoffload.core.directpath import HkdfCore, direct_construction, own_methods, python_hkdf
from cryptoffload.core.names import HASH_NAMES, XOF_NAMES
from cryptoffload.core.provider import Provider, checked_provider, resolve
from cryptoffload.hashes import _BY_CLASS as _HASH_CLASSES
from cryptoffload.hmac import HMAC
from cryptoffload.kdf._base import USIZE_MAX, OneShotKDF, material, optional_bytes, size

__all__ = ["HKDF", "HKDFExpand"]


class HKDF(HkdfCore):
    """HKDF extract-then-expand: ``length`` bytes from key material, ``salt`` and ``info``.

    Where no engine claims the hash's HMAC, HkdfCore's direct path (see
    :class:`cryptoffload.core.directpath.PureHkdfCore`) has `cryptography`'s HKDF derive the key and
    records the HMAC ops below as they would be counted; otherwise each is an HMAC op of the
    provider."""

    __slots__ = ()
    #: The direct path's (see PureHkdfCore): hash class -> (its HMAC's lane, digest size, Python's
    #: HMAC for it or None), filled by :meth:`_init_slow`; `cryptography`'s HKDF.
    _direct_path = ({}, _OpenSSLHKDF)
    derive_into = OneShotKDF.derive_into
    verify = OneShotKDF.verify
    _begin = OneShotKDF._begin
    _claim = OneShotKDF._claim
    __repr__ = OneShotKDF.__repr__

    def _init_slow(
        self,
        algorithm: HashAlgorithm,
        length: int,
        salt: bytes | None = None,
        info: bytes | None = None,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        length = size(length)
        self._salt = optional_bytes("salt", salt)
        self._info = optional_bytes("info", info)
        _check_length(algorithm, length)
        self._algorithm = algorithm
        self._length = length
        self._provider = checked_provider(provider)
        self._used = False
        cls = algorithm.__class__
        if provider is None and cls in _HASH_CLASSES:  # HkdfCore's construction may take it
            lane = resolve(None).lane(f"hmac-{_HASH_CLASSES[cls]}")
            known = self._direct_path[0].get(cls)
            if not lane.software_only or (known is not None and known[0] is lane):
                return
            try:  # `cryptography`'s HKDF must take the hash, as our HMAC does
                _OpenSSLHKDF(algorithm, length, self._salt, self._info)
            except Exception:
                return
            self._direct_path[0][cls] = (lane, algorithm.digest_size, _python_hmac(algorithm))

    def _derive_slow(self, key_material: bytes) -> bytes:
        return OneShotKDF.derive(self, key_material)

    @staticmethod
    def extract(
        algorithm: HashAlgorithm,
        salt: bytes | None,
        key_material: bytes,
        *,
        provider: Provider | None = None,
    ) -> bytes:
        """The pseudorandom key HMAC-Hash(salt, key_material) (salt None: zeros): one op."""
        salt = optional_bytes("salt", salt)
        return _extract(algorithm, salt, material("key_material", key_material), provider)

    def _extract(self, key_material: bytes) -> bytes:
        # cryptography's HKDF has this private method, and other projects call it (scapy).
        key = material("key_material", key_material)
        return _extract(self._algorithm, self._salt, key, self._provider)

    def _derive(self, state: Any) -> bytes:
        prk = _extract(self._algorithm, self._salt, state, self._provider)
        return _expand(self._algorithm, prk, self._info or b"", self._length, self._provider)


class HKDFExpand(OneShotKDF):
    """HKDF's expand step alone: ``length`` bytes from a pseudorandom key and ``info``."""

    __slots__ = ("_algorithm", "_info")

    def __init__(
        self,
        algorithm: HashAlgorithm,
        length: int,
        info: bytes | None,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        length = size(length)
        self._info = optional_bytes("info", info) or b""
        _check_length(algorithm, length)
        self._algorithm = algorithm
        self._length = length
        self._provider = checked_provider(provider)
        self._used = False

    def _derive(self, state: Any) -> bytes:
        return _expand(self._algorithm, state, self._info, self._length, self._provider)


KeyDerivationFunction.register(HKDF)
direct_construction(HKDF)
own_methods(HKDF)
KeyDerivationFunction.register(HKDFExpand)


#: Hash class -> what :func:`_python_hmac` found for it (the check runs once per hash, not once
#: per provider whose lane the direct path learns).
_PYTHON_HMACS: dict[type, tuple[Any, str] | None] = {}


def _python_hmac(algorithm: HashAlgorithm) -> tuple[Any, str] | None:
    """The direct path's HMAC for an HKDF of ``algorithm``: (``_hashlib.hmac_new``, the hash's
    name there), whose HMACs cost less than `cryptography`'s HKDF's own; None where Python's
    OpenSSL lacks the hash, or where it does not give `cryptography`'s answer (checked once per
    hash class, on derivations of three blocks with a salt and without)."""
    cls = algorithm.__class__
    if cls not in _PYTHON_HMACS:
        _PYTHON_HMACS[cls] = _checked_python_hmac(algorithm)
    return _PYTHON_HMACS[cls]


def _checked_python_hmac(algorithm: HashAlgorithm) -> tuple[Any, str] | None:
    ours = _HASH_CLASSES.get(algorithm.__class__)
    if ours is None or ours in XOF_NAMES or ours not in HASH_NAMES:
        return None
    try:
        from _hashlib import hmac_new

        python_hmac = (hmac_new, HASH_NAMES[ours])
        length = 2 * algorithm.digest_size + 1
        for salt in (None, b"salt"):
            mine = python_hkdf(python_hmac, b"ikm", salt, b"info", length, algorithm.digest_size)
            theirs = _OpenSSLHKDF(algorithm, length, salt, b"info").derive(b"ikm")
            if mine != theirs:
                return None
    except Exception:  # no such hash in Python's OpenSSL (or none at all): cryptography's HKDF
        return None
    return python_hmac


def _check_length(algorithm: Any, length: int) -> None:
    """ValueError past 255 blocks of the hash (RFC 5869 2.3)."""
    digest_size = size(algorithm.digest_size)
    if 255 * digest_size > USIZE_MAX:
        raise ValueError("Digest size too large, would cause overflow in max length calculation")
    if length > 255 * digest_size:
        raise ValueError(f"Cannot derive keys larger than {255 * digest_size} octets.")


def _extract(algorithm: Any, salt: bytes | None, key: bytes, provider: Provider | None) -> bytes:
    if salt is None:
        salt = bytes(size(algorithm.digest_size))
    mac = HMAC(salt, algorithm, provider=provider)
    mac.update(key)
    return mac.finalize()


def _expand(
    algorithm: Any, prk: bytes, info: bytes, length: int, provider: Provider | None
) -> bytes:
    """T(1) | T(2) | ... cut to ``length``, T(i) = HMAC(prk, T(i-1) | info | i): an op each."""
    keyed = HMAC(prk, algorithm, provider=provider)
    out = bytearray()
    block = b""
    counter = 0
    while len(out) < length:
        counter += 1
        mac = keyed.copy()
        mac.update(block + info + bytes((counter,)))
        block = mac.finalize()
        out += block
    return bytes(out[:length])
