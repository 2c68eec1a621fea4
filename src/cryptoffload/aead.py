"""Authenticated encryption: AES-GCM and AES-CCM, shaped like `cryptography`'s `aead` module."""

from __future__ import annotations

import os
from collections import deque
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import aead as _aead

from cryptoffload import provider as _p
from cryptoffload import validate
from cryptoffload.counters import FOLD_AT
from cryptoffload.ops import Op
from cryptoffload.provider import SOFTWARE, Provider, _current, default_provider

__all__ = ["AESCCM", "AESGCM"]

_BYTES = (bytes, bytearray, memoryview)


class _AeadBase:
    __slots__ = ("_alg", "_cached", "_key", "_provider", "_sw", "_tag_length")

    _MODE = ""

    def __init__(self, key: bytes, tag_length: int, provider: Provider | None) -> None:
        validate.aes_key(key)
        self._key = bytes(key)
        self._tag_length = tag_length
        self._alg = f"aes-{len(key) * 8}-{self._MODE}"
        self._provider = provider
        self._sw = None
        self._cached: tuple[Provider, bool, deque] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._alg} tag_length={self._tag_length}>"

    @classmethod
    def generate_key(cls, bit_length: int) -> bytes:
        """A fresh random key of 128, 192 or 256 bits."""
        if not isinstance(bit_length, int):
            raise TypeError("bit_length must be an integer")
        if bit_length not in (128, 192, 256):
            raise ValueError(f"bit_length must be 128, 192, or 256, got {bit_length}")
        return os.urandom(bit_length // 8)

    def _route(self) -> tuple[Provider, bool, deque]:
        provider = self._provider or _current.get() or _p._default or default_provider()
        cached = self._cached
        if cached is None or cached[0] is not provider:
            # The software fast path needs the one-shot object to take this tag length.
            direct = provider.direct(self._alg) and self._direct_ok()
            pending = provider.counters.cell(SOFTWARE, self._alg).pending
            cached = self._cached = (provider, direct, pending)
        return cached

    def _direct_ok(self) -> bool:
        return True

    def _check(self, nonce: bytes, data: bytes, aad: bytes | None, tag_length: int = 0) -> None:
        raise NotImplementedError

    def _software(self):
        raise NotImplementedError

    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """Ciphertext followed by the tag."""
        provider, direct, _ = self._route()
        self._check(nonce, data, associated_data)
        if direct:
            sw = self._sw or self._software()
            out = sw.encrypt(nonce, data, associated_data)
            provider.counters.software(self._alg, len(data))
            return out
        return self._run_encrypt(provider, nonce, data, associated_data)

    def _run_encrypt(self, provider: Provider, nonce: bytes, data: bytes, associated_data) -> bytes:
        op = Op(
            "aead",
            self._alg,
            "encrypt",
            key=self._key,
            iv=bytes(nonce),
            data=data,
            aad=associated_data,
            length=self._tag_length,
        )
        ciphertext, tag = provider.run(op)
        return ciphertext + tag

    def decrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """The plaintext, or InvalidTag (and nothing else) when the data was altered."""
        provider, direct, _ = self._route()
        # The data ends with the tag: CCM's length limit is on what comes before it.
        self._check(nonce, data, associated_data, self._tag_length)
        if direct:
            sw = self._sw or self._software()
            size = max(len(data) - self._tag_length, 0)
            try:
                out = sw.decrypt(nonce, data, associated_data)
            except InvalidTag:
                provider.counters.software(self._alg, size)
                raise
            provider.counters.software(self._alg, size)
            return out
        tag_length = self._tag_length
        if len(data) < tag_length:
            raise InvalidTag
        view = memoryview(data)
        op = Op(
            "aead",
            self._alg,
            "decrypt",
            key=self._key,
            iv=bytes(nonce),
            data=bytes(view[:-tag_length]),
            aad=associated_data,
            tag=bytes(view[-tag_length:]),
            length=tag_length,
        )
        return provider.run(op)

    def encrypt_into(
        self, nonce: bytes, data: bytes, associated_data: bytes | None, buf: Any
    ) -> int:
        """Write ciphertext and tag into ``buf`` (exactly len(data) + tag bytes); return that."""
        provider = self._provider or _current.get() or _p._default or default_provider()
        cached = self._cached
        if cached is None or cached[0] is not provider:
            cached = self._route()
        self._check(nonce, data, associated_data)
        need = len(data) + self._tag_length
        if memoryview(buf).nbytes != need:
            raise ValueError(f"buffer must be {need} bytes")
        if cached[1]:
            n = (self._sw or self._software()).encrypt_into(nonce, data, associated_data, buf)
            pending = cached[2]
            pending.append(len(data))
            if len(pending) > FOLD_AT:
                provider.counters.cell(SOFTWARE, self._alg).fold()
            return n
        memoryview(buf).cast("B")[:] = self._run_encrypt(provider, nonce, data, associated_data)
        return need

    def decrypt_into(
        self, nonce: bytes, data: bytes, associated_data: bytes | None, buf: Any
    ) -> int:
        """Write the plaintext into ``buf`` (len(data) - tag bytes), only once the tag holds."""
        need = len(data) - self._tag_length
        if need < 0:
            raise InvalidTag
        if memoryview(buf).nbytes != need:
            raise ValueError(f"buffer must be {need} bytes")
        plaintext = self.decrypt(nonce, data, associated_data)
        memoryview(buf).cast("B")[:] = plaintext
        return need


class AESGCM(_AeadBase):
    """AES-GCM with a 16-byte tag by default; ``tag_length`` 4, 8 or 12-16 as SP 800-38D allows."""

    __slots__ = ()
    _MODE = "gcm"

    def __init__(
        self, key: bytes, tag_length: int = 16, *, provider: Provider | None = None
    ) -> None:
        validate.gcm_tag_length(tag_length)
        super().__init__(key, tag_length, provider)

    def _direct_ok(self) -> bool:
        return self._tag_length == 16

    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """Ciphertext followed by the tag."""
        # The hot path of the library, kept flat: see benchmarks/overhead.py.
        provider = self._provider or _current.get() or _p._default or default_provider()
        cached = self._cached
        if cached is None or cached[0] is not provider:
            cached = self._route()
        if nonce.__class__ is not bytes or not 8 <= len(nonce) <= 128:
            validate.gcm_nonce(nonce)
        if data.__class__ is not bytes:
            validate.byteslike("data", data)
        if associated_data is not None and associated_data.__class__ is not bytes:
            validate.byteslike("associated_data", associated_data)
        if cached[1]:
            out = (self._sw or self._software()).encrypt(nonce, data, associated_data)
            pending = cached[2]
            pending.append(len(data))  # the counter cell's hot path, inlined
            if len(pending) > FOLD_AT:
                provider.counters.cell(SOFTWARE, self._alg).fold()
            return out
        return self._run_encrypt(provider, nonce, data, associated_data)

    def _software(self) -> _aead.AESGCM:
        self._sw = _aead.AESGCM(self._key)
        return self._sw

    def _check(self, nonce: bytes, data: bytes, aad: bytes | None, tag_length: int = 0) -> None:
        if nonce.__class__ is not bytes or not 8 <= len(nonce) <= 128:
            validate.gcm_nonce(nonce)
        if data.__class__ is not bytes:
            validate.byteslike("data", data)
        if aad is not None and aad.__class__ is not bytes:
            validate.byteslike("associated_data", aad)


class AESCCM(_AeadBase):
    """AES-CCM with a tag of 4 to 16 bytes (even) and a nonce of 7 to 13 bytes."""

    __slots__ = ()
    _MODE = "ccm"

    def __init__(
        self, key: bytes, tag_length: int = 16, *, provider: Provider | None = None
    ) -> None:
        if not isinstance(tag_length, int):
            raise TypeError("tag_length must be an integer")
        validate.ccm_tag_length(tag_length)
        super().__init__(key, tag_length, provider)

    def _software(self) -> _aead.AESCCM:
        self._sw = _aead.AESCCM(self._key, tag_length=self._tag_length)
        return self._sw

    def _check(self, nonce: bytes, data: bytes, aad: bytes | None, tag_length: int = 0) -> None:
        validate.byteslike("data", data)
        if aad is not None:
            validate.byteslike("associated_data", aad)
        validate.ccm_nonce(nonce, max(len(data) - tag_length, 0))
