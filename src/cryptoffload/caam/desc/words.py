"""Descriptor words: the decoded-command record and the words' byte layout in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptoffload.caam.desc import encoding as E

__all__ = ["Command", "check_byteorder", "check_word", "from_bytes", "to_bytes"]


@dataclass(frozen=True)
class Command:
    """One decoded command: where it starts, its name, every word it spans, its named fields."""

    index: int
    name: str
    words: tuple[int, ...]
    fields: dict[str, Any]

    def __repr__(self) -> str:
        if self.name in ("KEY", "SEQ_KEY") and self.fields.get("data") is not None:
            shown = {**self.fields, "data": f"<{len(self.fields['data'])} bytes>"}
            return (
                f"Command(index={self.index}, name='{self.name}', words=<hidden>, fields={shown})"
            )
        return (
            f"Command(index={self.index}, name={self.name!r}, "
            f"words=({', '.join(f'0x{w:08x}' for w in self.words)}), fields={self.fields})"
        )


def check_byteorder(byteorder: str) -> str:
    """``byteorder`` itself when it is "big" or "little", else ValueError."""
    if byteorder not in ("big", "little"):
        raise ValueError(f"byteorder must be 'big' or 'little', got {byteorder!r}")
    return byteorder


def to_bytes(words: Sequence[int], byteorder: str = "big") -> bytes:
    """Descriptor words as they sit in memory, 4 bytes each in the part's byte order."""
    check_byteorder(byteorder)
    return b"".join(check_word(w, i).to_bytes(4, byteorder) for i, w in enumerate(words))


def from_bytes(data: bytes, byteorder: str = "big") -> list[int]:
    """Descriptor words read from memory; the length must be a multiple of 4 bytes."""
    check_byteorder(byteorder)
    if len(data) % 4:
        raise ValueError(f"descriptor bytes must be a multiple of 4 long, got {len(data)} bytes")
    return [int.from_bytes(data[i : i + 4], byteorder) for i in range(0, len(data), 4)]


def check_word(word: int, index: int) -> int:
    if not isinstance(word, int) or not 0 <= word <= E.WORD_MASK:
        raise ValueError(f"descriptor word {index} must be a 32-bit unsigned int, got {word!r}")
    return word
