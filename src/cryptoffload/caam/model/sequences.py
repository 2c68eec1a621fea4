"""The DECO's input and output sequences: a flat buffer or a sec4 S/G table, and what is left.

A sequence is set by SEQ IN PTR / SEQ OUT PTR (a pointer and a length) and consumed by the SEQ
commands, each of which takes its bytes from the current position. ``remaining`` is what the
MATH sources SEQINLEN / SEQOUTLEN read: the length minus what SEQ commands have taken.

sec4 S/G table entries are 16 bytes (Linux ``struct sec4_sg_entry``): a 64-bit address, the
length word (bit 31 EXT: the address is a further table; bit 30 FIN: the last entry; bits 29:0
the length) and the offset word (bits 12:0, added to the address). Each word is in the part's
byte order; the address's two words go most significant first on big-endian parts and on i.MX,
the only little-endian parts this model has (Layerscape would put the low word first).

Walking rules (choices where the sources stop are marked):
- entries are read in order as data is needed; an entry of length 0 is skipped; the walk stops
  when the sequence length is met, FIN or not (Linux's skcipher input tables carry none);
- needing data past a FIN entry: DECO 0x01 (SGT length error);
- an all-zero entry reached while data is still needed: DECO 0x02 (SGT null entry; choice);
- EXT: continue with the table at the entry's address (plus offset);
- more than 4096 entries read for one command (an EXT loop): the DECO watchdog, 0x1C (choice).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cryptoffload.caam import status
from cryptoffload.caam.model.dma import DECO_WATCHDOG, Extent, JobBus, JobStop

__all__ = ["ENTRY_BYTES", "Sequence", "SgCursor", "SgEntry", "parse_entry", "table_extents"]

ENTRY_BYTES = 16
SG_EXT = 0x8000_0000
SG_FIN = 0x4000_0000
SG_LENGTH_MASK = 0x3FFF_FFFF
SG_OFFSET_MASK = 0x1FFF
MAX_ENTRIES = 4096

DECO_SGT_LENGTH = 0x01
DECO_SGT_NULL = 0x02
DECO_INVALID_SEQUENCE = 0x10


@dataclass(frozen=True)
class SgEntry:
    """One parsed table entry; ``address`` includes the offset."""

    address: int
    length: int
    final: bool
    extension: bool
    null: bool


def parse_entry(raw: bytes, byteorder: str) -> SgEntry:
    """The entry in 16 bytes of memory, as a part of ``byteorder`` reads it."""
    words = [int.from_bytes(raw[i : i + 4], byteorder) for i in range(0, ENTRY_BYTES, 4)]
    address = words[0] << 32 | words[1]
    flags = words[2]
    return SgEntry(
        address=address + (words[3] & SG_OFFSET_MASK),
        length=flags & SG_LENGTH_MASK,
        final=bool(flags & SG_FIN),
        extension=bool(flags & SG_EXT),
        null=not any(raw),
    )


@dataclass
class SgCursor:
    """Where a walk through an S/G table stands."""

    entry_addr: int  # the entry being used, or the next one to read
    current: SgEntry | None = None
    used: int = 0  # bytes of ``current`` already taken
    finished: bool = False  # the FIN entry has been used up

    def take(self, bus: JobBus, byteorder: str, n: int, index: int) -> list[Extent]:
        """The extents of the next ``n`` bytes; JobStop on a table error."""
        out: list[Extent] = []
        reads = 0
        while n > 0:
            if self.current is None:
                reads += 1
                if reads > MAX_ENTRIES:
                    raise JobStop(status.deco(DECO_WATCHDOG, index))
                self._load(bus, byteorder, index)
                continue
            k = min(n, self.current.length - self.used)
            out.append((self.current.address + self.used, k))
            self.used += k
            n -= k
            if self.used == self.current.length:
                self._next()
        return out

    def _load(self, bus: JobBus, byteorder: str, index: int) -> None:
        if self.finished:
            raise JobStop(status.deco(DECO_SGT_LENGTH, index))
        entry = parse_entry(bus.fetch(self.entry_addr, ENTRY_BYTES, index), byteorder)
        if entry.null:
            raise JobStop(status.deco(DECO_SGT_NULL, index))
        if entry.extension:
            self.entry_addr = entry.address
            return
        self.current, self.used = entry, 0
        if not entry.length:
            self._next()

    def _next(self) -> None:
        assert self.current is not None
        self.finished = self.current.final
        self.current, self.used = None, 0
        self.entry_addr += ENTRY_BYTES


class Sequence:
    """One sequence (input or output) of a job; empty until a SEQ PTR sets it."""

    def __init__(self, bus: JobBus, byteorder: str) -> None:
        self._bus = bus
        self._order = byteorder
        self.pointer: int | None = None
        self.total = 0
        self.pos = 0
        self._cursor: SgCursor | None = None  # S/G tables: where the walk stands
        self._origin: SgCursor | None = None  # ... and where the sequence began

    @property
    def remaining(self) -> int:
        """Bytes the SEQ commands have not taken yet (SEQINLEN / SEQOUTLEN)."""
        return max(self.total - self.pos, 0)

    @property
    def is_set(self) -> bool:
        return self.pointer is not None

    @property
    def flat_address(self) -> int | None:
        """Where the next byte is, for a flat (not S/G) sequence; None otherwise."""
        if self.pointer is None or self._cursor is not None:
            return None
        return self.pointer + self.pos

    def state(self) -> tuple[object, ...]:
        """Everything that decides what the sequence gives next (for loop detection)."""
        c = self._cursor
        walk = None if c is None else (c.entry_addr, c.current, c.used, c.finished)
        return (self.pointer, self.total, self.pos, walk)

    def set(self, pointer: int, length: int, sgf: bool) -> None:
        """SEQ PTR with a pointer: a new sequence of ``length`` bytes."""
        self.pointer, self.total, self.pos = pointer, length, 0
        self._origin = SgCursor(pointer) if sgf else None
        self._cursor = replace(self._origin) if sgf else None

    def follow(self, length: int) -> None:
        """SEQ PTR PRE: a new sequence of ``length`` bytes starting where this one stands."""
        if self._cursor is None:
            assert self.pointer is not None
            self.pointer += self.pos
        else:
            self._origin = replace(self._cursor)
        self.total, self.pos = length, 0

    def rewind(self, length: int) -> None:
        """SEQ PTR RTO: back to the start of the sequence, now ``length`` bytes long."""
        self.total, self.pos = length, 0
        if self._origin is not None:
            self._cursor = replace(self._origin)

    def set_remaining(self, value: int) -> None:
        """MATH with SEQINLEN / SEQOUTLEN as destination."""
        self.total = self.pos + value

    def take(self, n: int, index: int) -> list[Extent]:
        """The extents of the next ``n`` bytes; DECO 0x10 when the sequence has fewer."""
        if n == 0:
            return []
        if self.pointer is None or n > self.remaining:
            raise JobStop(status.deco(DECO_INVALID_SEQUENCE, index))
        self.pos += n
        if self._cursor is None:
            return [(self.pointer + self.pos - n, n)]
        return self._cursor.take(self._bus, self._order, n, index)


def table_extents(bus: JobBus, byteorder: str, table: int, n: int, index: int) -> list[Extent]:
    """The first ``n`` bytes an S/G table at ``table`` describes (FIFO LOAD/STORE with SGF)."""
    return SgCursor(table).take(bus, byteorder, n, index)
