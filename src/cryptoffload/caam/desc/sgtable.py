"""sec4 scatter/gather tables (Linux's ``struct sec4_sg_entry``), laid out as the kernel does."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptoffload.caam.desc.words import check_byteorder

__all__ = [
    "ENTRY_SIZE",
    "SG_EXT",
    "SG_FIN",
    "SG_LEN_MASK",
    "SG_OFFSET_MASK",
    "SgEntry",
    "Slice",
    "TableSpec",
    "decode_table",
    "encode_entry",
    "padded_count",
    "parse_table_spec",
    "resolve",
    "table_bytes",
]

#: One entry: 64-bit address, then the length word (EXT, FIN, length), then the offset word.
ENTRY_SIZE = 16
SG_EXT = 0x8000_0000  # the entry's address is a further table
SG_FIN = 0x4000_0000  # the last entry of the table
SG_LEN_MASK = 0x3FFF_FFFF
SG_OFFSET_MASK = 0x1FFF
SG_BPID_SHIFT = 16  # buffer pool id, bits 23:16 of the offset word (QI only)
SG_BPID_MASK = 0xFF
#: The hardware reads entries 4 at a time: the kernel pads each table to a multiple of 4 entries
#: with zeroed ones (``pad_sg_nents``).
PAD_ENTRIES = 4


@dataclass(frozen=True)
class SgEntry:
    """One table entry: ``length`` bytes at ``address + offset`` (the kernel writes offset 0)."""

    address: int
    length: int
    final: bool = False
    extension: bool = False
    offset: int = 0
    bpid: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.address < 1 << 64:
            raise ValueError(f"S/G address 0x{self.address:x} does not fit 64 bits")
        if not 0 <= self.length <= SG_LEN_MASK:
            raise ValueError(f"S/G length {self.length} does not fit 30 bits")
        if not 0 <= self.offset <= SG_OFFSET_MASK:
            raise ValueError(f"S/G offset {self.offset} does not fit 13 bits")
        if not 0 <= self.bpid <= SG_BPID_MASK:
            raise ValueError(f"S/G buffer pool id {self.bpid} does not fit 8 bits")


def _address_words(address: int, lsw_first: bool) -> tuple[int, int]:
    high, low = address >> 32, address & 0xFFFF_FFFF
    return (low, high) if lsw_first else (high, low)


def encode_entry(entry: SgEntry, byteorder: str, *, lsw_first: bool = False) -> bytes:
    """The entry's 16 bytes, each word in ``byteorder``. The address's two words go most
    significant first (big-endian parts and i.MX) unless ``lsw_first`` (other little-endian
    parts, Layerscape: the address is then a little-endian u64)."""
    check_byteorder(byteorder)
    flags = (SG_FIN if entry.final else 0) | (SG_EXT if entry.extension else 0)
    words = (
        *_address_words(entry.address, lsw_first),
        flags | entry.length,
        entry.bpid << SG_BPID_SHIFT | entry.offset,
    )
    return b"".join(w.to_bytes(4, byteorder) for w in words)


def padded_count(entries: int) -> int:
    """Entries allocated for ``entries`` used ones: the next multiple of 4, as the kernel pads."""
    return -(-entries // PAD_ENTRIES) * PAD_ENTRIES


def table_bytes(
    entries: Sequence[SgEntry], byteorder: str, *, lsw_first: bool = False, pad: bool = True
) -> bytes:
    """The table as it sits in memory: the entries as given (FIN wherever they carry it), then
    zeroed entries up to a multiple of 4 when ``pad``."""
    if not entries:
        raise ValueError("an S/G table needs at least one entry")
    data = b"".join(encode_entry(e, byteorder, lsw_first=lsw_first) for e in entries)
    count = padded_count(len(entries)) if pad else len(entries)
    return data + bytes((count - len(entries)) * ENTRY_SIZE)


def decode_table(data: bytes, byteorder: str, *, lsw_first: bool = False) -> list[SgEntry]:
    """Every 16-byte entry of ``data`` (padding included), read back as :func:`encode_entry`
    writes it."""
    check_byteorder(byteorder)
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"an S/G table is a multiple of 16 bytes long, got {len(data)} bytes")
    out = []
    for i in range(0, len(data), ENTRY_SIZE):
        w = [int.from_bytes(data[i + j : i + j + 4], byteorder) for j in range(0, 16, 4)]
        first, second = (w[1], w[0]) if lsw_first else (w[0], w[1])
        out.append(
            SgEntry(
                address=first << 32 | second,
                length=w[2] & SG_LEN_MASK,
                final=bool(w[2] & SG_FIN),
                extension=bool(w[2] & SG_EXT),
                offset=w[3] & SG_OFFSET_MASK,
                bpid=w[3] >> SG_BPID_SHIFT & SG_BPID_MASK,
            )
        )
    return out


@dataclass(frozen=True)
class Slice:
    """``length`` bytes (None: to the end) of the region called ``name``, from ``offset``."""

    name: str
    offset: int = 0
    length: int | None = None

    def __str__(self) -> str:
        text = self.name + (f"+{self.offset}" if self.offset else "")
        return text + (f":{self.length}" if self.length is not None else "")


_SLICE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\+(\w+))?(?::(\w+))?\Z")
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FORM = "NAME=BUF[+OFF][:LEN],BUF2[+OFF][:LEN]..."


@dataclass(frozen=True)
class TableSpec:
    """A table to build: its name and the slices its entries point at, in order."""

    name: str
    slices: tuple[Slice, ...]


def parse_table_spec(spec: str) -> TableSpec:
    """``NAME=BUF[+OFF][:LEN],...`` (OFF and LEN decimal or 0x hex). Only the form is checked
    here: :func:`resolve` checks the names and the ranges."""
    name, sep, value = spec.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"--sg takes {_FORM}; got no '=' or no name")
    if not _TABLE_NAME.match(name):
        raise ValueError(f"--sg {name!r}: the name must be a letter or _ then letters, digits or _")
    items = [item.strip() for item in value.split(",")]
    if not any(items):
        raise ValueError(f"--sg {name}: the table is empty; give at least one BUF[+OFF][:LEN]")
    slices = []
    for n, item in enumerate(items):
        bad = ValueError(
            f"--sg {name}: entry {n} ({item!r}) is not BUF[+OFF][:LEN] "
            "(OFF and LEN decimal or 0x hex)"
        )
        m = _SLICE.match(item)
        if not m:
            raise bad
        try:
            offset = int(m.group(2), 0) if m.group(2) is not None else 0
            length = int(m.group(3), 0) if m.group(3) is not None else None
        except ValueError:
            raise bad from None
        slices.append(Slice(m.group(1), offset, length))
    return TableSpec(name, tuple(slices))


def resolve(
    spec: TableSpec, regions: Mapping[str, tuple[int, int]]
) -> tuple[tuple[Slice, ...], tuple[SgEntry, ...]]:
    """The table's entries over ``regions`` (name: (address, size)), with their slices (lengths
    resolved): FIN on the last, offset 0 (a slice's offset is added to the address, as the kernel
    does). ValueError for an unknown name or a slice past its region's end."""
    slices, entries = [], []
    for n, piece in enumerate(spec.slices):
        what = f"S/G table {spec.name}: entry {n} ({piece})"
        if piece.name not in regions:
            known = ", ".join(regions) or "none"
            raise ValueError(f"{what}: no buffer has that name (buffers: {known})")
        address, size = regions[piece.name]
        length = size - piece.offset if piece.length is None else piece.length
        if piece.offset > size or length < 0 or piece.offset + length > size:
            raise ValueError(f"{what} runs past the end of {piece.name!r} ({size} bytes)")
        last = n == len(spec.slices) - 1
        slices.append(Slice(piece.name, piece.offset, length))
        entries.append(SgEntry(address + piece.offset, length, final=last))
    return tuple(slices), tuple(entries)
