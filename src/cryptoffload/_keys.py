"""Shared plumbing of the public-key wrappers: routing to the provider in force, digests."""

from __future__ import annotations

import hashlib
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from cryptoffload import provider as _p
from cryptoffload.counters import Cell
from cryptoffload.names import HASH_CLASSES, HASH_NAMES, hash_name
from cryptoffload.provider import SOFTWARE, Provider, _current, default_provider


class RoutedKey:
    """A key object that remembers, per provider, whether only software takes its algorithm."""

    __slots__ = ("_cached", "_key", "_provider")

    def _init_routing(self, key: Any, provider: Provider | None) -> None:
        self._key = key
        self._provider = provider
        self._cached: tuple[Provider | None, dict[str, tuple[bool, Cell]]] = (None, {})

    def _route(self, alg: str) -> tuple[Provider, bool, Cell]:
        """(provider in force, whether only software takes ``alg``, software's counter cell)."""
        provider = self._provider or _current.get() or _p._default or default_provider()
        cached = self._cached
        if cached[0] is not provider:
            cached = self._cached = (provider, {})
        entry = cached[1].get(alg)
        if entry is None:
            entry = cached[1][alg] = (provider.direct(alg), provider.counters.cell(SOFTWARE, alg))
        return provider, entry[0], entry[1]

    def __repr__(self) -> str:
        # The wrapped key never shows: only its type and size.
        return f"<{type(self).__name__} {self._describe()}>"

    def _describe(self) -> str:
        return ""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key == other._key  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key)


_OFFERED = frozenset(HASH_CLASSES.values())


def check_hash(algorithm: Any) -> None:
    """TypeError unless ``algorithm`` (or the one ``Prehashed`` wraps) is a hash we offer."""
    if algorithm.__class__ not in _OFFERED:
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
