"""AES key wrap, as `cryptography`'s ``keywrap``: RFC 3394 (``aes-128-keywrap``...) and RFC
5649 with padding (``aes-128-keywrap-pad``...), each call one op engines may take."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.keywrap import InvalidUnwrap

from cryptoffload.core import validate
from cryptoffload.core.names import keywrap_name
from cryptoffload.core.ops import KeywrapOp
from cryptoffload.core.provider import Provider, resolve

__all__ = [
    "InvalidUnwrap",
    "aes_key_unwrap",
    "aes_key_unwrap_with_padding",
    "aes_key_wrap",
    "aes_key_wrap_with_padding",
]


def _run(kind: str, key: Any, data: Any, padded: bool, provider: Provider | None) -> bytes:
    # `cryptography`'s order: wrapping checks the key first, unwrapping the wrapped key first;
    # these are every check of a key-wrap op (the name follows the key), so the lane skips its.
    if kind == "wrap":
        validate.wrapping_key(key)
        validate.key_to_wrap(data, padded)
    else:
        validate.wrapped_key(data, padded)
        validate.wrapping_key(key)
    alg = keywrap_name(len(key), padded)
    return resolve(provider).lane(alg).run(KeywrapOp(alg, kind, bytes(key), data), checked=True)


def aes_key_wrap(
    wrapping_key: bytes,
    key_to_wrap: bytes,
    backend: object = None,
    *,
    provider: Provider | None = None,
) -> bytes:
    """``key_to_wrap`` (16 bytes or more, whole 8-byte blocks) wrapped under an AES key."""
    return _run("wrap", wrapping_key, key_to_wrap, False, provider)


def aes_key_unwrap(
    wrapping_key: bytes,
    wrapped_key: bytes,
    backend: object = None,
    *,
    provider: Provider | None = None,
) -> bytes:
    """The key inside ``wrapped_key``; InvalidUnwrap if it was not wrapped under this key."""
    return _run("unwrap", wrapping_key, wrapped_key, False, provider)


def aes_key_wrap_with_padding(
    wrapping_key: bytes,
    key_to_wrap: bytes,
    backend: object = None,
    *,
    provider: Provider | None = None,
) -> bytes:
    """``key_to_wrap`` (any length from 1 byte) wrapped under an AES key, RFC 5649."""
    return _run("wrap", wrapping_key, key_to_wrap, True, provider)


def aes_key_unwrap_with_padding(
    wrapping_key: bytes,
    wrapped_key: bytes,
    backend: object = None,
    *,
    provider: Provider | None = None,
) -> bytes:
    """The key inside an RFC 5649 ``wrapped_key``; InvalidUnwrap if it does not open."""
    return _run("unwrap", wrapping_key, wrapped_key, True, provider)
