"""The descriptor workbench behind `caam run`: named buffers, @name pointers, one job via a ring.

A descriptor is given as words; a word may be ``@name`` or ``@name+OFFSET`` (OFFSET decimal, or
hex with 0x), which becomes the model address of that buffer (two words, most significant first,
with long pointers). A shared descriptor (its words written alike, ``@shared`` its address) and
sec4 S/G tables over slices of the buffers (``@TABLE`` their addresses, built by ``sgtable``) may
go with it. The job runs through the project's one driver (``caam.driver.Driver``) on job ring 0
of a fresh model: the buffers, tables and shared descriptor are written to its DMA memory, the
job goes on the ring and its status comes back from the output ring. Nothing here prints; the
only files read or written are those the buffers name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptoffload.caam.desc import sgtable
from cryptoffload.caam.desc.words import to_bytes
from cryptoffload.caam.jr.driver import RNG_INSTANTIATE, CaamError, CaamUnavailable, Driver
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.status import Status

__all__ = [
    "RNG_INSTANTIATE",
    "SHARED",
    "Buffer",
    "BuiltTable",
    "Ref",
    "WorkbenchError",
    "WorkbenchResult",
    "parse_buffer",
    "parse_table",
    "parse_tokens",
    "run_descriptor",
    "save_outputs",
]

#: The name ``@shared`` stands for: the shared descriptor's address.
SHARED = "shared"
MAX_BUFFER = 1 << 24

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_REF = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)(?:\+(\w+))?\Z")


class WorkbenchError(ValueError):
    """Bad usage: a malformed buffer or word, an unknown buffer name, a part without the SEC."""


@dataclass(frozen=True)
class Buffer:
    """A named buffer: an input with its contents, or an output of ``size`` zeroed bytes (and the
    file it is to be saved in after the job, if any)."""

    name: str
    data: bytes = field(repr=False)  # may be a key: never shown
    output: bool = False
    path: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise WorkbenchError(
                f"buffer name {self.name!r} must be a letter or _ then letters, digits or _"
            )
        if len(self.data) > MAX_BUFFER:
            raise WorkbenchError(
                f"buffer {self.name!r} is {len(self.data)} bytes; at most {MAX_BUFFER} allowed"
            )

    @classmethod
    def output_of(cls, name: str, size: int, path: str | None = None) -> Buffer:
        """An output buffer of ``size`` bytes, zero before the job, saved to ``path`` if given."""
        if not 0 < size <= MAX_BUFFER:
            raise WorkbenchError(
                f"output buffer {name!r} needs a size from 1 to {MAX_BUFFER} bytes, got {size}"
            )
        return cls(name, bytes(size), output=True, path=path)

    def __len__(self) -> int:
        return len(self.data)


def _hex_bytes(name: str, text: str) -> bytes:
    digits = "".join(text.split())
    if len(digits) % 2:
        raise WorkbenchError(f"buffer {name!r}: odd number of hex digits ({len(digits)})")
    bad = next((i for i, c in enumerate(digits) if c not in "0123456789abcdefABCDEF"), None)
    if bad is not None:
        # The position only: the text may be a key.
        raise WorkbenchError(f"buffer {name!r}: not a hex digit at position {bad}")
    return bytes.fromhex(digits)


def parse_buffer(spec: str, *, output: bool) -> Buffer:
    """``NAME=hex:HEX``, ``NAME=HEX``, ``NAME=@FILE`` or ``NAME=text:TEXT`` for an input;
    ``NAME=SIZE`` (bytes, decimal or 0x hex) or ``NAME=SIZE@FILE`` (saved to FILE after the
    job, see :func:`save_outputs`) for an output."""
    name, sep, value = spec.partition("=")
    name = name.strip()
    kind = "--out" if output else "--in"
    if not sep or not name:
        form = "NAME=SIZE[@FILE]" if output else "NAME=hex:HEX, NAME=@FILE or NAME=text:TEXT"
        raise WorkbenchError(f"{kind} takes {form}; got no '=' or no name")
    if output:
        size_text, at, path = value.partition("@")
        if at and not path:
            raise WorkbenchError(f"--out {name}: no file after '@'; expected NAME=SIZE@FILE")
        try:
            size = int(size_text.strip(), 0)
        except ValueError:
            raise WorkbenchError(
                f"--out {name}: the size must be a number of bytes (NAME=SIZE or "
                f"NAME=SIZE@FILE), got {size_text!r}"
            ) from None
        return Buffer.output_of(name, size, path=path or None)
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise WorkbenchError(f"--in {name}: cannot read {path}: {exc.strerror}") from None
    elif value.startswith("text:"):
        data = value[5:].encode()
    else:
        data = _hex_bytes(name, value.removeprefix("hex:"))
    return Buffer(name, data)


@dataclass(frozen=True)
class Ref:
    """A pointer word to be filled in: the address of buffer ``name`` plus ``offset``."""

    name: str
    offset: int = 0

    def __str__(self) -> str:
        return f"@{self.name}" + (f"+{self.offset}" if self.offset else "")


def _token(token: str, n: int) -> int | Ref:
    if token.startswith("@"):
        m = _REF.match(token)
        if not m:
            raise WorkbenchError(f"token {n} ({token!r}) is not @NAME or @NAME+OFFSET")
        offset = 0
        if m.group(2) is not None:
            try:
                offset = int(m.group(2), 0)
            except ValueError:
                raise WorkbenchError(
                    f"token {n} ({token!r}): the offset must be decimal or 0x hex"
                ) from None
        return Ref(m.group(1), offset)
    digits = token[2:] if token.lower().startswith("0x") else token
    if not digits or not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise WorkbenchError(f"token {n} ({token!r}) is neither a hex word nor @NAME")
    value = int(digits, 16)
    if value > 0xFFFFFFFF:
        raise WorkbenchError(f"token {n} ({token!r}) does not fit 32 bits")
    return value


def parse_tokens(text: str) -> list[int | Ref]:
    """Hex words and @NAME[+OFFSET] references, whitespace or comma separated, ``#`` comments."""
    raw: list[str] = []
    for line in text.splitlines():
        raw += line.split("#", 1)[0].replace(",", " ").split()
    if not raw:
        raise WorkbenchError("no descriptor words given")
    return [_token(t, n) for n, t in enumerate(raw)]


def parse_table(spec: str) -> sgtable.TableSpec:
    """``NAME=BUF[+OFF][:LEN],BUF2...``: an S/G table over slices of named buffers (OFF from 0,
    LEN to the buffer's end by default; decimal or 0x hex), FIN on its last entry."""
    try:
        return sgtable.parse_table_spec(spec)
    except ValueError as exc:
        raise WorkbenchError(str(exc)) from None


@dataclass(frozen=True)
class BuiltTable:
    """An S/G table in DMA memory: its address, each used entry with the slice it points at
    (lengths resolved), and its bytes after the job (padding entries included)."""

    address: int
    slices: tuple[sgtable.Slice, ...]
    entries: tuple[sgtable.SgEntry, ...]
    image: bytes = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        entries = [
            {
                "buffer": s.name,
                "offset": s.offset,
                "length": e.length,
                "address": f"0x{e.address:08x}",
                "fin": e.final,
            }
            for s, e in zip(self.slices, self.entries, strict=True)
        ]
        return {"address": f"0x{self.address:08x}", "entries": entries, "bytes": self.image.hex()}


def _resolve(
    tokens: Sequence[int | Ref],
    where: Mapping[str, int],
    sizes: Mapping[str, int],
    pointer_words: int,
    *,
    what: str = "word",
    known: str = "",
) -> list[int]:
    words: list[int] = []
    for token in tokens:
        if isinstance(token, int):
            words.append(token)
            continue
        if token.name not in where:
            hint = "; --shared gives the shared descriptor" if token.name == SHARED else ""
            raise WorkbenchError(
                f"{what} {len(words)} refers to {token}, but no buffer has that name "
                f"({known or 'buffers: none'}{hint})"
            )
        if not 0 <= token.offset <= sizes[token.name]:
            raise WorkbenchError(
                f"{what} {len(words)}: {token} lies past the end of {token.name!r} "
                f"({sizes[token.name]} bytes)"
            )
        addr = where[token.name] + token.offset
        words += [addr >> 32, addr & 0xFFFFFFFF] if pointer_words == 2 else [addr]
    return words


@dataclass(frozen=True)
class WorkbenchResult:
    """One job's outcome as a driver sees it, with the buffers the user may look at."""

    part: str
    byteorder: str
    long_pointers: bool
    rng_instantiated: bool
    rdsta: int
    status: int
    words: tuple[int, ...]
    descriptor_address: int
    buffers: Mapping[str, tuple[int, int, str]]  # name: (address, length, "in" or "out")
    outputs: Mapping[str, bytes]  # every output buffer after the job
    changed: Mapping[str, bytes]  # input buffers the job wrote to
    counters: Mapping[str, Any]  # the user's job only (the setup job is not counted)
    shared_words: tuple[int, ...] = ()  # the shared descriptor, if any
    shared_address: int | None = None
    shared_image: bytes = b""  # its bytes in DMA memory after the job
    tables: Mapping[str, BuiltTable] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def status_text(self) -> str:
        return Status(self.status).describe()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready object: status as a 0x%08x string, buffers as hex."""
        return {
            "part": self.part,
            "byteorder": self.byteorder,
            "long_pointers": self.long_pointers,
            "rng_instantiated": self.rng_instantiated,
            "rdsta": f"0x{self.rdsta:08x}",
            "status": f"0x{self.status:08x}",
            "status_text": self.status_text,
            "outputs": {k: v.hex() for k, v in self.outputs.items()},
            "changed": {k: v.hex() for k, v in self.changed.items()},
            "counters": dict(self.counters),
            "descriptor": {
                "address": f"0x{self.descriptor_address:08x}",
                "words": [f"0x{w:08x}" for w in self.words],
            },
            "buffers": {
                name: {"address": f"0x{addr:08x}", "length": n, "direction": d}
                for name, (addr, n, d) in self.buffers.items()
            },
            "shared": None
            if self.shared_address is None
            else {
                "address": f"0x{self.shared_address:08x}",
                "words": [f"0x{w:08x}" for w in self.shared_words],
            },
            "tables": {name: t.to_json() for name, t in self.tables.items()},
        }


def save_outputs(result: WorkbenchResult, buffers: Sequence[Buffer]) -> dict[str, str]:
    """Write each output buffer that names a file (``NAME=SIZE@FILE``) there, whatever the
    job's status; returns buffer name -> file for those written."""
    written: dict[str, str] = {}
    for b in buffers:
        if b.output and b.path is not None:
            try:
                Path(b.path).write_bytes(result.outputs[b.name])
            except OSError as exc:
                raise WorkbenchError(
                    f"--out {b.name}: cannot write {b.path}: {exc.strerror or exc}"
                ) from None
            written[b.name] = b.path
    return written


def _tokens(words: str | Sequence[int | str | Ref]) -> list[int | Ref]:
    if isinstance(words, str):
        return parse_tokens(words)
    out: list[int | Ref] = []
    for n, w in enumerate(words):
        if isinstance(w, str):
            out.append(_token(w.strip(), n))
        elif isinstance(w, Ref) or (isinstance(w, int) and 0 <= w <= 0xFFFFFFFF):
            out.append(w)
        else:
            raise WorkbenchError(f"token {n} is not a 32-bit word, @NAME or Ref")
    if not out:
        raise WorkbenchError("no descriptor words given")
    return out


def _check_names(
    buffers: Sequence[Buffer], tables: Sequence[sgtable.TableSpec], shared: bool
) -> None:
    names = [b.name for b in buffers] + [t.name for t in tables]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise WorkbenchError(
            f"the name {dup!r} is given twice (buffers and S/G tables each need their own)"
        )
    if shared and SHARED in names:
        raise WorkbenchError(f"@{SHARED} is the shared descriptor's address: rename {SHARED!r}")
    table_names = {t.name for t in tables}
    for t in tables:
        for n, piece in enumerate(t.slices):
            if piece.name in table_names:
                raise WorkbenchError(
                    f"S/G table {t.name}: entry {n} names the S/G table {piece.name!r}: "
                    "chained tables (EXT entries) are not supported"
                )


def _known(buffers: Sequence[Buffer], tables: Sequence[sgtable.TableSpec], shared: bool) -> str:
    text = "buffers: " + (", ".join(b.name for b in buffers) or "none")
    if tables:
        text += "; S/G tables: " + ", ".join(t.name for t in tables)
    return text + (f"; @{SHARED}: the shared descriptor" if shared else "")


def run_descriptor(
    part: str,
    words: str | Sequence[int | str | Ref],
    buffers: Sequence[Buffer] = (),
    *,
    shared: str | Sequence[int | str | Ref] | None = None,
    tables: Sequence[sgtable.TableSpec | str] = (),
    rng_instantiated: bool = True,
    long_pointers: bool = False,
    seed: bytes | None = None,
) -> WorkbenchResult:
    """Run one descriptor on a fresh model of ``part`` through job ring 0.

    ``words``: text (as ``parse_tokens`` reads it) or a sequence of ints, ``"@name+off"`` strings
    and ``Ref``. ``shared``: a shared descriptor's words, alike, written to its own region;
    ``@shared`` is its address. ``tables``: S/G tables (``parse_table`` specs), written after the
    buffers; ``@NAME`` is a table's address. ``rng_instantiated``: first run the RNG4 instantiate
    recipe for state handle 0 through the ring, as a driver does after reset. Raises
    ``WorkbenchError`` for bad usage, never for a job that fails: its status is in the result.
    """
    from cryptoffload.caam.model import CaamModel
    from cryptoffload.caam.model.core import Counters

    tokens = _tokens(words)
    shared_tokens = None if shared is None else _tokens(shared)
    specs = [parse_table(t) if isinstance(t, str) else t for t in tables]
    _check_names(buffers, specs, shared is not None)
    known = _known(buffers, specs, shared is not None)
    try:
        model = CaamModel(part, seed=seed)
    except ValueError as exc:
        raise WorkbenchError(str(exc)) from None
    try:
        driver = Driver(
            ModelTransport(model), long_pointers=long_pointers, separate_descriptors=True
        )
    except CaamUnavailable as exc:
        raise WorkbenchError(f"{exc}; nothing ran") from None
    if rng_instantiated:
        try:
            driver.ensure_rng()
        except CaamError as exc:
            raise WorkbenchError(f"{exc}; try --no-rng-instantiate") from None
    rdsta = driver.rdsta
    model.counters = Counters()  # count the user's job only
    pointer_words = driver.pointer_size // 4

    where: dict[str, int] = {}
    for b in buffers:
        where[b.name] = driver.put(b.data)
    sizes = {b.name: len(b) for b in buffers}
    regions = {b.name: (where[b.name], len(b)) for b in buffers}
    built: dict[str, tuple[tuple[sgtable.Slice, ...], tuple[sgtable.SgEntry, ...]]] = {}
    for spec in specs:
        try:
            built[spec.name] = sgtable.resolve(spec, regions)
        except ValueError as exc:
            raise WorkbenchError(str(exc)) from None
        image = sgtable.table_bytes(built[spec.name][1], driver.byteorder)
        where[spec.name], sizes[spec.name] = driver.put(image), len(image)
    shared_words: list[int] = []
    shared_address = None
    if shared_tokens is not None:
        count = sum(pointer_words if isinstance(t, Ref) else 1 for t in shared_tokens)
        shared_address = where[SHARED] = driver.alloc(4 * count)
        sizes[SHARED] = 4 * count
        shared_words = _resolve(
            shared_tokens, where, sizes, pointer_words, what="shared word", known=known
        )
        driver.write(shared_address, to_bytes(shared_words, driver.byteorder))
    resolved = _resolve(tokens, where, sizes, pointer_words, known=known)
    try:
        job = driver.submit(resolved)
        word = job.wait()
    except (ValueError, CaamError) as exc:
        raise WorkbenchError(str(exc)) from None

    after = {b.name: driver.read(where[b.name], len(b)) for b in buffers}
    shared_image = b"" if shared_address is None else driver.read(shared_address, sizes[SHARED])
    return WorkbenchResult(
        part=model.part.name,
        byteorder=driver.byteorder,
        long_pointers=driver.long_pointers,
        rng_instantiated=rng_instantiated,
        rdsta=rdsta,
        status=word,
        words=tuple(resolved),
        descriptor_address=job.desc,
        buffers={b.name: (where[b.name], len(b), "out" if b.output else "in") for b in buffers},
        outputs={b.name: after[b.name] for b in buffers if b.output},
        changed={
            b.name: after[b.name] for b in buffers if not b.output and after[b.name] != b.data
        },
        counters=model.counters.snapshot(),
        shared_words=tuple(shared_words),
        shared_address=shared_address,
        shared_image=shared_image,
        tables={
            name: BuiltTable(where[name], slices, entries, driver.read(where[name], sizes[name]))
            for name, (slices, entries) in built.items()
        },
    )
