"""A ``Cipher`` stream that OpenSSL carries from call to call, counted when it ends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher as _Cipher
from cryptography.hazmat.primitives.ciphers import CipherContext
from cryptography.hazmat.primitives.ciphers.modes import ModeWithAuthenticationTag

from cryptoffload.blocks.cipher_contexts import MAKE_CONTEXT
from cryptoffload.core.provider import Lane

__all__ = ["MAKE_CONTEXT", "SoftwareStream", "software_context"]


def software_context(cipher: Any, encrypt: bool) -> Any:
    """`cryptography`'s own context for a ``Cipher``'s algorithm and mode.

    Our ``Cipher`` ran `cryptography`'s checks of the algorithm and mode when it was made, as
    `cryptography`'s ``Cipher`` does (its ``encryptor`` checks only a GCM tag again). So the
    context comes from the call its ``encryptor`` makes, without a second ``Cipher`` checking
    the same things again (a microsecond of a per-message GCM stream's time).
    """
    if MAKE_CONTEXT is None:
        sw = _Cipher(cipher.algorithm, cipher.mode)
        return sw.encryptor() if encrypt else sw.decryptor()
    mode = cipher.mode
    if encrypt:
        if getattr(mode, "tag", None) is not None and isinstance(mode, ModeWithAuthenticationTag):
            raise ValueError("Authentication tag must be None when encrypting.")
        return MAKE_CONTEXT[0](cipher.algorithm, mode)
    return MAKE_CONTEXT[1](cipher.algorithm, mode)


class SoftwareStream:
    """A stream no engine on the route carries across calls (ARC4's state; GCM's GHASH where no
    engine opens an AEAD stream): OpenSSL does it.

    The op is counted when it ends, with ``declines`` saying why each engine did not take it
    (``streaming`` for an engine that keeps no running state).
    """

    __slots__ = ("_counted", "_ctx", "_declines", "_lane", "_total")

    def __init__(self, cipher: Any, lane: Lane, encrypt: bool, declines: Mapping[str, str]) -> None:
        self._ctx = software_context(cipher, encrypt)
        self._lane = lane
        self._declines = declines
        self._total = 0
        self._counted = False

    def update(self, data: bytes) -> bytes:
        out = self._ctx.update(data)
        self._total += len(data)
        return out

    def update_into(self, data: bytes, buf: Any) -> int:
        n = self._ctx.update_into(data, buf)
        self._total += len(data)
        return n

    def reset_nonce(self, nonce: bytes) -> None:
        self._ctx.reset_nonce(nonce)

    def _done(self) -> None:
        if self._counted:
            return
        self._counted = True
        self._lane.finish_in_software(self._total, self._declines)

    def finalize(self) -> bytes:
        try:
            return self._ctx.finalize()
        finally:
            self._done()


CipherContext.register(SoftwareStream)
