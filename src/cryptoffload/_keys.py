"""Shared plumbing of the public-key wrappers: routing to the provider in force, digests."""

from __future__ import annotations

import hashlib
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from cryptoffload.names import HASH_NAMES, hash_name
from cryptoffload.provider import Provider, _current, default_provider


class RoutedKey:
    """A key object that remembers, per provider, whether only software takes its algorithm."""

    __slots__ = ("_cached", "_key", "_provider")

    def _init_routing(self, key: Any, provider: Provider | None) -> None:
        self._key = key
        self._provider = provider
        self._cached: tuple[Provider, str, bool] | None = None

    def _route(self, alg: str) -> tuple[Provider, bool]:
        provider = self._provider or _current.get() or default_provider()
        cached = self._cached
        if cached is None or cached[0] is not provider or cached[1] != alg:
            cached = self._cached = (provider, alg, provider.direct(alg))
        return provider, cached[2]

    def __repr__(self) -> str:
        # The wrapped key never shows: only its type and size.
        return f"<{type(self).__name__} {self._describe()}>"

    def _describe(self) -> str:
        return ""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key == other._key  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key)


def check_hash(algorithm: Any) -> None:
    """TypeError unless ``algorithm`` (or the one ``Prehashed`` wraps) is a hash we offer."""
    hash_name(algorithm._algorithm if isinstance(algorithm, Prehashed) else algorithm)


def digest_for(data: bytes, algorithm: Any) -> tuple[bytes, hashes.HashAlgorithm]:
    """(digest, hash algorithm) of ``data`` under ``algorithm``, which may be ``Prehashed``."""
    if isinstance(algorithm, Prehashed):
        inner = algorithm._algorithm
        hash_name(inner)
        if len(data) != inner.digest_size:
            raise ValueError(
                f"prehashed data must be {inner.digest_size} bytes for {inner.name}, "
                f"got {len(data)}"
            )
        return bytes(data), inner
    return hashlib.new(HASH_NAMES[hash_name(algorithm)], data).digest(), algorithm
