"""What Ed25519/Ed448 (signatures) and X25519/X448 (agreement) keys share: fixed-size raw keys."""

from __future__ import annotations

from typing import Any, ClassVar

from cryptography.exceptions import InvalidSignature

from cryptoffload._keys import PrivateKey, PublicKey
from cryptoffload.core import validate
from cryptoffload.core.ops import EddsaOp, XdhOp
from cryptoffload.core.provider import Provider


class RawPublicKey(PublicKey):
    """A public key of a fixed-size curve: ``from_public_bytes``, ``public_bytes_raw``."""

    __slots__ = ()
    #: The algorithm's name (``ed25519``, ``x448``...): what the key's ops are called after.
    _domain: ClassVar[str] = ""

    @classmethod
    def from_public_bytes(cls, data: bytes, *, provider: Provider | None = None) -> Any:
        """The public key from its raw encoding."""
        return cls(cls._WRAPS.from_public_bytes(data), provider=provider)

    def public_bytes_raw(self) -> bytes:
        """The raw encoding."""
        return self._key.public_bytes_raw()


class RawPrivateKey(PrivateKey):
    """A private key of a fixed-size curve: ``generate``, ``from_private_bytes``, raw bytes."""

    __slots__ = ()
    _domain: ClassVar[str] = ""

    @classmethod
    def generate(cls, *, provider: Provider | None = None) -> Any:
        """A new key (generated in OpenSSL)."""
        return cls(cls._WRAPS.generate(), provider=provider)

    @classmethod
    def from_private_bytes(cls, data: bytes, *, provider: Provider | None = None) -> Any:
        """The key from its raw encoding."""
        return cls(cls._WRAPS.from_private_bytes(data), provider=provider)

    def private_bytes_raw(self) -> bytes:
        """The raw encoding."""
        return self._key.private_bytes_raw()

    def private_numbers(self) -> Any:
        raise AttributeError(f"{type(self).__name__} has no private numbers")


class EdPublicKey(RawPublicKey):
    """An EdDSA public key: ``verify`` is offered to engines (``ed25519-verify``...)."""

    __slots__ = ()

    def verify(self, signature: bytes, data: bytes) -> None:
        """Raise InvalidSignature unless ``signature`` signs ``data``."""
        validate.byteslike("signature", signature)
        validate.byteslike("data", data)
        lane = self._lane(f"{self._domain}-verify")
        if lane.software_only:
            try:
                self._key.verify(signature, data)
            finally:
                lane.count(0)
            return
        lane.run(EddsaOp(lane.alg, "verify", self._key, data, signature=signature))


class EdPrivateKey(RawPrivateKey):
    """An EdDSA private key: ``sign`` is offered to engines (``ed25519-sign``...)."""

    __slots__ = ()

    def sign(self, data: bytes) -> bytes:
        """The signature of ``data`` (pure EdDSA: the message itself, not a digest)."""
        validate.byteslike("data", data)
        lane = self._lane(f"{self._domain}-sign")
        if lane.software_only:
            out = self._key.sign(data)
            lane.count(0)
            return out
        return lane.run(EddsaOp(lane.alg, "sign", self._key, data))


class XPublicKey(RawPublicKey):
    """An X25519/X448 public key: the peer of an ``exchange``."""

    __slots__ = ()


class XPrivateKey(RawPrivateKey):
    """An X25519/X448 private key: ``exchange`` is offered to engines (``x25519``, ``x448``)."""

    __slots__ = ()

    def exchange(self, peer_public_key: Any) -> bytes:
        """The shared secret; ValueError when it is all zeros (a low-order peer point)."""
        public = self._PUBLIC
        try:
            peer_public_key = public._adopt(peer_public_key, self._provider)
        except TypeError:
            raise TypeError(f"peer_public_key must be {public._EXPECTED}") from None
        lane = self._lane(self._domain)
        peer = peer_public_key._key
        if lane.software_only:
            try:
                return self._key.exchange(peer)
            finally:
                lane.count(0)
        return lane.run(XdhOp(lane.alg, "exchange", self._key, peer))


__all__ = ["EdPrivateKey", "EdPublicKey", "InvalidSignature", "XPrivateKey", "XPublicKey"]
