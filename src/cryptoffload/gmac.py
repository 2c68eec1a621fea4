"""GMAC: AES-GCM authentication of a message with no ciphertext (SP 800-38D)."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload._stream import MacContext
from cryptoffload.core import validate
from cryptoffload.core.ops import MacOp
from cryptoffload.core.provider import Provider
from cryptoffload.devicekey import DeviceKey

__all__ = ["GMAC"]


class _SoftwareGmac:
    """A GCM encryptor fed only associated data."""

    __slots__ = ("_ctx",)

    def __init__(self, key: bytes, nonce: bytes) -> None:
        self._ctx = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()

    def update(self, data: bytes) -> None:
        self._ctx.authenticate_additional_data(data)

    def tag(self) -> bytes:
        self._ctx.finalize()
        return self._ctx.tag


class GMAC(MacContext):
    """``GMAC(key, nonce, tag_length=16)``: ``update`` the message, then ``finalize``/``verify``.

    A nonce must never repeat under one key, exactly as for GCM encryption.
    """

    __slots__ = ("_key", "_nonce", "_tag_length")
    _VERIFY_ARG = "tag"
    _MISMATCH = "GMAC tag did not match."

    def __init__(
        self, key: bytes, nonce: bytes, tag_length: int = 16, *, provider: Provider | None = None
    ) -> None:
        if isinstance(key, DeviceKey):
            raise TypeError("GMAC takes key bytes; a device key works with aead.AESGCM/AESCCM")
        validate.aes_key(key)
        validate.gcm_nonce(nonce)
        validate.gcm_tag_length(tag_length)
        self._key = bytes(key)
        self._nonce = bytes(nonce)
        self._tag_length = tag_length
        self._start(f"gmac-aes-{len(key) * 8}", provider)

    def __repr__(self) -> str:
        return f"<GMAC {self._alg} tag_length={self._tag_length}>"

    def _software(self) -> _SoftwareGmac:
        return _SoftwareGmac(self._key, self._nonce)

    def _software_final(self, ctx: _SoftwareGmac) -> bytes:
        return ctx.tag()[: self._tag_length]

    def _op(self, data: bytes) -> MacOp:
        return MacOp(self._alg, "mac", self._key, data, self._nonce, self._tag_length)

    def verify(self, tag: bytes) -> None:
        """Raise InvalidSignature unless ``tag`` is this message's tag (constant-time)."""
        MacContext.verify(self, tag)
