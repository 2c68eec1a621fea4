"""Inputs cut into pieces of varying sizes, to feed streaming contexts one ``update`` at a time."""

from __future__ import annotations

from collections.abc import Sequence


def split(data: bytes, pattern: Sequence[int], start: int = 0) -> list[bytes]:
    """``data`` cut into pieces of the sizes in ``pattern`` (repeated), from position ``start``."""
    out, pos, i = [], 0, start
    while pos < len(data):
        size = pattern[i % len(pattern)]
        out.append(data[pos : pos + size])
        pos += size
        i += 1
    return out
