"""Fernet tokens, as `cryptography.fernet`, on cryptoffload's own AES-128-CBC and HMAC-SHA256:
each token's encryption and MAC are ops of the provider (``aes-128-cbc``, ``hmac-sha256``)."""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Iterable
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.fernet import InvalidToken

from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.hashes import SHA256
from cryptoffload.hmac import HMAC
from cryptoffload.padding import PKCS7

__all__ = ["Fernet", "InvalidToken", "MultiFernet"]

#: How far in the future a token's timestamp may be when a ttl is checked (seconds).
_MAX_CLOCK_SKEW = 60
#: Token layout: version byte 0x80, 8-byte timestamp, 16-byte IV, ciphertext, 32-byte tag.
_VERSION = 0x80
_TAG = 32
_BLOCK_BITS = 128


class Fernet:
    """Authenticated encryption of messages as url-safe base64 tokens (the Fernet spec)."""

    def __init__(
        self, key: bytes | str, backend: Any = None, *, provider: Provider | None = None
    ) -> None:
        try:
            raw = base64.urlsafe_b64decode(key)
        except binascii.Error as exc:
            raise ValueError("Fernet key must be 32 url-safe base64-encoded bytes.") from exc
        if len(raw) != 32:
            raise ValueError("Fernet key must be 32 url-safe base64-encoded bytes.")
        self._signing_key = raw[:16]
        self._encryption_key = raw[16:]
        self._provider = checked_provider(provider)

    def __repr__(self) -> str:
        return "<Fernet>"

    @classmethod
    def generate_key(cls) -> bytes:
        """A new key: 32 random bytes, url-safe base64."""
        return base64.urlsafe_b64encode(os.urandom(32))

    def encrypt(self, data: bytes) -> bytes:
        """A token for ``data``, stamped with the time now."""
        return self.encrypt_at_time(data, int(time.time()))

    def encrypt_at_time(self, data: bytes, current_time: int) -> bytes:
        """A token for ``data``, stamped with ``current_time``."""
        return self._encrypt_from_parts(data, current_time, os.urandom(16))

    def _encrypt_from_parts(self, data: bytes, current_time: int, iv: bytes) -> bytes:
        if not isinstance(data, bytes):
            raise TypeError("data must be bytes.")
        padder = PKCS7(_BLOCK_BITS).padder()
        padded = padder.update(data) + padder.finalize()
        encryptor = self._cipher(iv).encryptor()
        ciphertext = encryptor.update(padded) + encryptor.finalize()
        body = bytes((_VERSION,)) + current_time.to_bytes(length=8, byteorder="big") + iv
        body += ciphertext
        mac = HMAC(self._signing_key, SHA256(), provider=self._provider)
        mac.update(body)
        return base64.urlsafe_b64encode(body + mac.finalize())

    def decrypt(self, token: bytes | str, ttl: int | None = None) -> bytes:
        """The message in ``token``; InvalidToken if it is altered, malformed or (with ``ttl``)
        older than ``ttl`` seconds."""
        timestamp, data = Fernet._get_unverified_token_data(token)
        window = None if ttl is None else (ttl, int(time.time()))
        return self._decrypt_data(data, timestamp, window)

    def decrypt_at_time(self, token: bytes | str, ttl: int, current_time: int) -> bytes:
        """As :meth:`decrypt`, the age measured at ``current_time``."""
        if ttl is None:
            raise ValueError("decrypt_at_time() can only be used with a non-None ttl")
        timestamp, data = Fernet._get_unverified_token_data(token)
        return self._decrypt_data(data, timestamp, (ttl, current_time))

    def extract_timestamp(self, token: bytes | str) -> int:
        """The time ``token`` was made (its MAC checked first)."""
        timestamp, data = Fernet._get_unverified_token_data(token)
        self._verify_signature(data)
        return timestamp

    @staticmethod
    def _get_unverified_token_data(token: bytes | str) -> tuple[int, bytes]:
        if not isinstance(token, (str, bytes)):
            raise TypeError("token must be bytes or str")
        try:
            data = base64.urlsafe_b64decode(token)
        except (TypeError, binascii.Error):
            raise InvalidToken from None
        if len(data) < 9 or data[0] != _VERSION:
            raise InvalidToken
        return int.from_bytes(data[1:9], byteorder="big"), data

    def _cipher(self, iv: bytes) -> Cipher:
        return Cipher(algorithms.AES(self._encryption_key), modes.CBC(iv), provider=self._provider)

    def _verify_signature(self, data: bytes) -> None:
        mac = HMAC(self._signing_key, SHA256(), provider=self._provider)
        mac.update(memoryview(data)[:-_TAG])
        try:
            mac.verify(data[-_TAG:])
        except InvalidSignature:
            raise InvalidToken from None

    def _decrypt_data(self, data: bytes, timestamp: int, window: tuple[int, int] | None) -> bytes:
        if window is not None:
            ttl, now = window
            if timestamp + ttl < now or now + _MAX_CLOCK_SKEW < timestamp:
                raise InvalidToken
        self._verify_signature(data)
        decryptor = self._cipher(data[9:25]).decryptor()
        try:
            padded = decryptor.update(memoryview(data)[25:-_TAG]) + decryptor.finalize()
            unpadder = PKCS7(_BLOCK_BITS).unpadder()
            return unpadder.update(padded) + unpadder.finalize()
        except ValueError:
            raise InvalidToken from None


class MultiFernet:
    """Several keys: tokens are made with the first, opened with any (key rotation)."""

    def __init__(self, fernets: Iterable[Fernet]) -> None:
        fernets = list(fernets)
        for fernet in fernets:  # as `cryptography` 51 checks them (before, a use failed later)
            if not isinstance(fernet, Fernet):
                raise TypeError(f"MultiFernet takes Fernet instances, got {type(fernet).__name__}")
        if not fernets:
            raise ValueError("MultiFernet requires at least one Fernet instance")
        self._fernets = fernets

    def encrypt(self, msg: bytes) -> bytes:
        """A token for ``msg`` under the first key, stamped now."""
        return self.encrypt_at_time(msg, int(time.time()))

    def encrypt_at_time(self, msg: bytes, current_time: int) -> bytes:
        """A token for ``msg`` under the first key, stamped with ``current_time``."""
        return self._fernets[0].encrypt_at_time(msg, current_time)

    def rotate(self, msg: bytes | str) -> bytes:
        """The token re-made under the first key, keeping its timestamp."""
        timestamp, data = Fernet._get_unverified_token_data(msg)
        plain = self._first(lambda f: f._decrypt_data(data, timestamp, None))
        return self._fernets[0]._encrypt_from_parts(plain, timestamp, os.urandom(16))

    def decrypt(self, msg: bytes | str, ttl: int | None = None) -> bytes:
        """The message, opened with whichever key made the token."""
        window = None if ttl is None else (ttl, int(time.time()))
        timestamp, data = Fernet._get_unverified_token_data(msg)
        return self._first(lambda f: f._decrypt_data(data, timestamp, window))

    def decrypt_at_time(self, msg: bytes | str, ttl: int, current_time: int) -> bytes:
        """As :meth:`decrypt`, the age measured at ``current_time``."""
        if ttl is None:
            raise ValueError("decrypt_at_time() can only be used with a non-None ttl")
        timestamp, data = Fernet._get_unverified_token_data(msg)
        return self._first(lambda f: f._decrypt_data(data, timestamp, (ttl, current_time)))

    def extract_timestamp(self, msg: bytes | str) -> int:
        """The time the token was made, its MAC checked under each key in turn."""
        timestamp, data = Fernet._get_unverified_token_data(msg)
        self._first(lambda f: f._verify_signature(data))
        return timestamp

    def _first(self, attempt: Any) -> Any:
        """The first key's answer that is not InvalidToken; InvalidToken if none."""
        for f in self._fernets:
            try:
                return attempt(f)
            except InvalidToken:
                pass
        raise InvalidToken
