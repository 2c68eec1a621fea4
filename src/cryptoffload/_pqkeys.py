"""What ML-KEM and ML-DSA keys share: a parameter set in the name, raw and seed encodings."""

from __future__ import annotations

from typing import Any, ClassVar

from cryptoffload._keys import PrivateKey, PublicKey
from cryptoffload.core.ops import Op
from cryptoffload.core.provider import Provider


class PqPublicKey(PublicKey):
    """A post-quantum public key: ``from_public_bytes``, ``public_bytes_raw``; ``_domain`` is
    the parameter set (``mlkem-768``), what its ops are named after."""

    __slots__ = ()
    _domain: ClassVar[str] = ""

    @classmethod
    def from_public_bytes(cls, data: bytes, *, provider: Provider | None = None) -> Any:
        """The public key from its raw encoding."""
        return cls(cls._WRAPS.from_public_bytes(data), provider=provider)

    def public_bytes_raw(self) -> bytes:
        """The raw encoding."""
        return self._key.public_bytes_raw()

    def public_numbers(self) -> Any:
        raise AttributeError(f"{type(self).__name__} has no public numbers")

    def _run(self, suffix: str, op: type[Op], kind: str, **fields: Any) -> Any:
        alg = f"{self._domain}-{suffix}"
        return self._lane(alg).run(op(alg, kind, self._key, **fields))


class PqPrivateKey(PrivateKey):
    """A post-quantum private key: ``generate``, ``from_seed_bytes``, ``private_bytes_raw``
    (the seed)."""

    __slots__ = ()
    _domain: ClassVar[str] = ""

    @classmethod
    def generate(cls, *, provider: Provider | None = None) -> Any:
        """A new key (generated in OpenSSL)."""
        return cls(cls._WRAPS.generate(), provider=provider)

    @classmethod
    def from_seed_bytes(cls, data: bytes, *, provider: Provider | None = None) -> Any:
        """The key from its seed."""
        return cls(cls._WRAPS.from_seed_bytes(data), provider=provider)

    def private_bytes_raw(self) -> bytes:
        """The raw encoding: the seed."""
        return self._key.private_bytes_raw()

    def private_numbers(self) -> Any:
        raise AttributeError(f"{type(self).__name__} has no private numbers")

    def _run(self, suffix: str, op: type[Op], kind: str, **fields: Any) -> Any:
        alg = f"{self._domain}-{suffix}"
        return self._lane(alg).run(op(alg, kind, self._key, **fields))
