"""Authenticated encryption: AES-GCM and AES-CCM, shaped like `cryptography`'s `aead` module."""

from __future__ import annotations

import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import aead as _aead

from cryptoffload import provider as _p
from cryptoffload import validate
from cryptoffload.counters import FOLD_AT
from cryptoffload.ops import Op
from cryptoffload.provider import SOFTWARE, Provider, _current, default_provider

__all__ = ["AESCCM", "AESGCM"]

_UNBOUND = (None, None, None, None)


class _AeadBase:
    """Shared by AESGCM and AESCCM.

    Per provider, the object keeps (provider, software object or None, the software counter
    cell's pending deque, its fold): when only software can take the algorithm the calls below
    go straight to OpenSSL, and `cryptography`'s own checks stand in for ours (on failure ours
    run to give the clearer message; both raise the same class).
    """

    __slots__ = ("_alg", "_cached", "_key", "_provider", "_tag_length")

    _MODE = ""

    def __init__(self, key: bytes, tag_length: int, provider: Provider | None) -> None:
        validate.aes_key(key)
        self._key = bytes(key)
        self._tag_length = tag_length
        self._alg = f"aes-{len(key) * 8}-{self._MODE}"
        self._provider = provider
        self._cached: tuple[Any, Any, Any, Any] = _UNBOUND

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

    def _bind(self, provider: Provider) -> tuple[Any, Any, Any, Any]:
        sw = None
        if provider.direct(self._alg) and self._direct_ok():
            sw = self._software()
        cell = provider.counters.cell(SOFTWARE, self._alg)
        cached = self._cached = (provider, sw, cell.pending, cell.fold)
        return cached

    def _direct_ok(self) -> bool:
        return True

    def _check(self, nonce: bytes, data: bytes, aad: bytes | None, tag_length: int) -> None:
        raise NotImplementedError

    def _software(self) -> Any:
        raise NotImplementedError

    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """Ciphertext followed by the tag."""
        # The library's hot path, kept flat: see benchmarks/overhead.py.
        provider = self._provider or _current.get() or _p._default or default_provider()
        cached = self._cached
        if cached[0] is not provider:
            cached = self._bind(provider)
        sw = cached[1]
        if sw is None:
            self._check(nonce, data, associated_data, 0)
            return self._run_encrypt(provider, nonce, data, associated_data)
        try:
            out = sw.encrypt(nonce, data, associated_data)
        except (TypeError, ValueError):
            self._check(nonce, data, associated_data, 0)
            raise
        pending = cached[2]
        pending.append(len(data))
        if len(pending) > FOLD_AT:
            cached[3]()
        return out

    def encrypt_into(
        self, nonce: bytes, data: bytes, associated_data: bytes | None, buf: Any
    ) -> int:
        """Write ciphertext and tag into ``buf`` (exactly len(data) + tag bytes); return that."""
        provider = self._provider or _current.get() or _p._default or default_provider()
        cached = self._cached
        if cached[0] is not provider:
            cached = self._bind(provider)
        sw = cached[1]
        if sw is None:
            self._check(nonce, data, associated_data, 0)
            need = len(data) + self._tag_length
            if memoryview(buf).nbytes != need:
                raise ValueError(f"buffer must be {need} bytes")
            sealed = self._run_encrypt(provider, nonce, data, associated_data)
            memoryview(buf).cast("B")[:] = sealed
            return need
        try:
            n = sw.encrypt_into(nonce, data, associated_data, buf)
        except (TypeError, ValueError):
            self._check(nonce, data, associated_data, 0)
            raise
        pending = cached[2]
        pending.append(len(data))
        if len(pending) > FOLD_AT:
            cached[3]()
        return n

    def _run_encrypt(self, provider: Provider, nonce: bytes, data: bytes, aad: Any) -> bytes:
        op = Op(
            "aead",
            self._alg,
            "encrypt",
            key=self._key,
            iv=bytes(nonce),
            data=data,
            aad=aad,
            length=self._tag_length,
        )
        ciphertext, tag = provider.run(op)
        return ciphertext + tag

    def decrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """The plaintext, or InvalidTag (and nothing else) when the data was altered."""
        provider = self._provider or _current.get() or _p._default or default_provider()
        cached = self._cached
        if cached[0] is not provider:
            cached = self._bind(provider)
        sw = cached[1]
        if sw is None:
            # The data ends with the tag: CCM's length limit is on what comes before it.
            self._check(nonce, data, associated_data, self._tag_length)
            return self._run_decrypt(provider, nonce, data, associated_data)
        try:
            out = sw.decrypt(nonce, data, associated_data)
        except InvalidTag:
            cached[2].append(max(len(data) - self._tag_length, 0))
            raise
        except (TypeError, ValueError):
            self._check(nonce, data, associated_data, self._tag_length)
            raise
        pending = cached[2]
        pending.append(len(out))
        if len(pending) > FOLD_AT:
            cached[3]()
        return out

    def _run_decrypt(self, provider: Provider, nonce: bytes, data: bytes, aad: Any) -> bytes:
        tag_length = self._tag_length
        if len(data) < tag_length:
            raise InvalidTag
        view = memoryview(data).cast("B")
        op = Op(
            "aead",
            self._alg,
            "decrypt",
            key=self._key,
            iv=bytes(nonce),
            data=bytes(view[:-tag_length]),
            aad=aad,
            tag=bytes(view[-tag_length:]),
            length=tag_length,
        )
        return provider.run(op)

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

    def _software(self) -> _aead.AESGCM:
        return _aead.AESGCM(self._key)

    def _check(self, nonce: bytes, data: bytes, aad: bytes | None, tag_length: int) -> None:
        validate.gcm_nonce(nonce)
        validate.byteslike("data", data)
        if aad is not None:
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

    # OpenSSL fails a CCM payload too long for its nonce with an internal error rather than a
    # ValueError, so CCM is checked here before OpenSSL sees it.
    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """Ciphertext followed by the tag."""
        self._check(nonce, data, associated_data, 0)
        return super().encrypt(nonce, data, associated_data)

    def encrypt_into(
        self, nonce: bytes, data: bytes, associated_data: bytes | None, buf: Any
    ) -> int:
        """Write ciphertext and tag into ``buf`` (exactly len(data) + tag bytes); return that."""
        self._check(nonce, data, associated_data, 0)
        return super().encrypt_into(nonce, data, associated_data, buf)

    def decrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """The plaintext, or InvalidTag when the data was altered."""
        self._check(nonce, data, associated_data, self._tag_length)
        return super().decrypt(nonce, data, associated_data)

    def _software(self) -> _aead.AESCCM:
        return _aead.AESCCM(self._key, tag_length=self._tag_length)

    def _check(self, nonce: bytes, data: bytes, aad: bytes | None, tag_length: int) -> None:
        validate.byteslike("data", data)
        if aad is not None:
            validate.byteslike("associated_data", aad)
        validate.ccm_nonce(nonce, max(len(data) - tag_length, 0))
