"""The Poly1305 one-time authenticator (RFC 8439), shaped like `cryptography`'s `poly1305`."""

from __future__ import annotations

import hmac
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.poly1305 import Poly1305 as _Poly1305

from cryptoffload._stream import MacContext
from cryptoffload.core import validate
from cryptoffload.core.ops import MacOp
from cryptoffload.core.provider import Provider, resolve

__all__ = ["Poly1305"]

#: Our name of the algorithm: what counters, policy and engines call it.
ALG = "poly1305"
_MISMATCH = "Value did not match computed tag."


class Poly1305(MacContext):
    """A streaming Poly1305 tag under a 32-byte one-time key: ``update``, then ``finalize`` (the
    16-byte tag) or ``verify``; ``generate_tag`` and ``verify_tag`` do it in one call (one op).

    A key must authenticate one message only (RFC 8439 2.5): derive a fresh one per message.
    """

    __slots__ = ("_key",)
    _OWN_FIELDS = ("_key",)
    _VERIFY_ARG = "tag"
    _MISMATCH = _MISMATCH

    def __init__(self, key: bytes, *, provider: Provider | None = None) -> None:
        self._key = _checked_key(key)
        self._start(ALG, provider)

    def __repr__(self) -> str:
        return "<Poly1305>"

    def _software(self) -> Any:
        return _Poly1305(self._key)

    def _software_final(self, ctx: Any) -> bytes:
        return ctx.finalize()

    def _op(self, data: bytes) -> MacOp:
        return MacOp(ALG, "mac", self._key, data)

    @classmethod
    def generate_tag(cls, key: bytes, data: bytes, *, provider: Provider | None = None) -> bytes:
        """The tag of ``data`` under ``key`` in one call: one op."""
        return _tag(_checked_key(key), data, provider)

    @classmethod
    def verify_tag(
        cls, key: bytes, data: bytes, tag: bytes, *, provider: Provider | None = None
    ) -> None:
        """Raise InvalidSignature unless ``tag`` is the tag of ``data`` under ``key``
        (constant-time): one op."""
        key = _checked_key(key)
        validate.byteslike("tag", tag)
        if not hmac.compare_digest(_tag(key, data, provider), bytes(tag)):
            raise InvalidSignature(_MISMATCH)


def _checked_key(key: Any) -> bytes:
    """``key`` as bytes: TypeError unless bytes-like, ValueError unless 32 bytes."""
    validate.poly1305_key(key)
    return bytes(key)


def _tag(key: bytes, data: Any, provider: Provider | None) -> bytes:
    lane = resolve(provider).lane(ALG)
    if not lane.software_only:
        # The policy may keep this size from every engine: OpenSSL then, as on a software-only
        # lane; count(~n) counts the engines' declines (see Lane.holds_back).
        if data.__class__ is not bytes or lane.hold_below <= (n := len(data)) <= lane.hold_above:
            return lane.run(MacOp(ALG, "mac", key, data))
        out = _Poly1305.generate_tag(key, data)
        lane.count(~n)
        return out
    try:
        out = _Poly1305.generate_tag(key, data)
    except TypeError:
        validate.byteslike("data", data)
        raise
    lane.count(len(data))
    return out
