"""The DECO's registers and data paths for one job: keys, contexts, FIFOs, sequences, PKHA.

``JobState`` carries what the commands that move data (KEY, LOAD, STORE, FIFO LOAD/STORE, SEQ
pointers, Clear-Written) read and write; ``deco.py`` adds the OPERATIONs, jumps and the run loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cryptoffload.caam import status
from cryptoffload.caam.model.cha import AesUnit, ChaError, MdUnit
from cryptoffload.caam.model.dma import JobBus, JobStop, OutputFifo
from cryptoffload.caam.model.memory import DmaMemory
from cryptoffload.caam.model.pkha import PkhaRegisters
from cryptoffload.caam.model.rng import Rng4
from cryptoffload.caam.words import Command

if TYPE_CHECKING:
    from cryptoffload.caam.model.parts import Part

__all__ = ["JobContext", "JobState", "fail"]

# DECO error codes status.py does not name (Linux drivers/crypto/caam/error.c).
DECO_INVALID_COMMAND = 0x04
DECO_INVALID_KEY = 0x06
DECO_INVALID_LOAD = 0x07
DECO_INVALID_STORE = 0x08
DECO_INVALID_OPERATION = 0x09
DECO_INVALID_FIFO_LOAD = 0x0A
DECO_INVALID_FIFO_STORE = 0x0B
DECO_INVALID_MOVE = 0x0C
DECO_INVALID_JUMP = 0x0D
DECO_INVALID_MATH = 0x0E
DECO_INVALID_SIGNATURE = 0x0F
DECO_INVALID_SEQUENCE = 0x10
DECO_SHARED_HEADER = 0x12
DECO_CONTEXT_LENGTH = 0x15

# Clear-Written register bits.
CLRW_C1MODE = 0x1
CLRW_C1CTX = 0x20
CLRW_C1KEY = 0x40
CLRW_C2MODE = 0x1_0000
CLRW_C2CTX = 0x20_0000
CLRW_C2KEY = 0x40_0000
CLRW_RESET_C2 = 0x0400_0000
CLRW_RESET_C1 = 0x2000_0000
CLRW_RESET_OFIFO = 0x4000_0000
CLRW_RESET_IFIFO = 0x8000_0000

CONTEXT_BYTES = {1: 64, 2: 72}

INVALID = {
    "KEY": DECO_INVALID_KEY,
    "LOAD": DECO_INVALID_LOAD,
    "STORE": DECO_INVALID_STORE,
    "FIFO_LOAD": DECO_INVALID_FIFO_LOAD,
    "FIFO_STORE": DECO_INVALID_FIFO_STORE,
    "MOVE": DECO_INVALID_MOVE,
    "MOVE_LEN": DECO_INVALID_MOVE,
    "MATH": DECO_INVALID_MATH,
    "SIGNATURE": DECO_INVALID_SIGNATURE,
    "JUMP": DECO_INVALID_JUMP,
    "OPERATION": DECO_INVALID_OPERATION,
}
_DATA_KINDS = {"MSG": "msg", "MSG1OUT2": "msg", "IV": "iv", "AAD": "aad", "ICV": "icv"}
_PK_REGS = {"PK_A": "a", "PK_A0": "a", "PK_B": "b", "PK_B0": "b", "PK_N": "n"}
_PK_STORES = {"PKHA_A": "a", "PKHA_A0": "a", "PKHA_B": "b", "PKHA_B0": "b", "PKHA_N": "n"}


@dataclass
class JobContext:
    """What a job runs against: DMA memory, the part (byte order, quirks) and the RNG4."""

    memory: DmaMemory
    part: Part
    rng: Rng4
    long_pointers: bool = False


def fail(code: int, index: int) -> JobStop:
    """JobStop with the DECO error ``code`` at descriptor word ``index``."""
    return JobStop(status.deco(code, index))


class JobState:
    """The DECO's registers and FIFOs for one job, and one method per command family."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.order = ctx.part.byteorder
        self.bus = JobBus(ctx.memory)
        self.out = OutputFifo(self.bus)
        self.keys = {1: b"", 2: b""}
        self.contexts = {n: bytearray(size) for n, size in CONTEXT_BYTES.items()}
        self.c1: AesUnit | None = None
        self.c1_mode: str | None = None  # what the class-1 mode register holds: "AES", "RNG"
        self.rng_handle = 0
        self.c2: MdUnit | None = None
        self.waiting: list[tuple[Command, bytes]] = []  # class-1 data before its OPERATION
        self.pk = PkhaRegisters()
        self.pdb: tuple[int, ...] = ()
        self.seq_in: list[int] | None = None  # [pointer, length, position]
        self.seq_out: list[int] | None = None
        self.chas: list[str] = []

    def used(self, cha: str) -> None:
        if cha not in self.chas:
            self.chas.append(cha)

    # ------------------------------------------------------------------ data in and out

    def _source(self, c: Command, length: int) -> bytes:
        """The bytes a KEY, LOAD or FIFO LOAD brings in: immediate, pointer or input sequence."""
        data = c.fields.get("data")
        if data is not None:
            return bytes(data)
        if c.fields.get("sgf"):
            raise fail(INVALID[c.name.removeprefix("SEQ_")], c.index)
        if c.name.startswith("SEQ_"):
            return self.bus.fetch(self._seq_take(self.seq_in, length, c.index), length, c.index)
        return self.bus.fetch(c.fields["pointer"], length, c.index)

    def _destination(self, c: Command, length: int) -> int:
        if c.fields.get("sgf"):
            raise fail(INVALID[c.name.removeprefix("SEQ_")], c.index)
        if c.name.startswith("SEQ_"):
            return self._seq_take(self.seq_out, length, c.index)
        return c.fields["pointer"]

    def _seq_take(self, seq: list[int] | None, length: int, index: int) -> int:
        if seq is None or seq[2] + length > seq[1]:
            raise fail(DECO_INVALID_SEQUENCE, index)
        addr = seq[0] + seq[2]
        seq[2] += length
        return addr

    def _seq_ptr(self, c: Command) -> None:
        flags = set(c.fields["flags"])
        if flags & {"SGF", "INL", "RBS", "RJD"}:
            raise fail(DECO_INVALID_SEQUENCE, c.index)
        attr = "seq_in" if c.name == "SEQ_IN_PTR" else "seq_out"
        previous = getattr(self, attr)
        if c.fields["pointer"] is not None:
            setattr(self, attr, [c.fields["pointer"], c.fields["length"], 0])
        elif previous is None:
            raise fail(DECO_INVALID_SEQUENCE, c.index)
        elif "RTO" in flags:  # restore: carry on from where the previous sequence stopped
            previous[1] = previous[2] + c.fields["length"]
        else:  # PRE: the same pointer again, a new length
            setattr(self, attr, [previous[0], c.fields["length"], 0])

    # ------------------------------------------------------------------ KEY, LOAD, STORE

    def _key(self, c: Command) -> None:
        f = c.fields
        if f["enc"] or f["tk"] or f["ekt"]:
            raise fail(DECO_INVALID_KEY, c.index)
        data = self._source(c, f["length"])
        if f["dest"] == "class-key" and f["cls"] in (1, 2):
            self.keys[f["cls"]] = data
        elif f["dest"] == "pkha-e":
            self.pk.e = data
        else:
            raise fail(DECO_INVALID_KEY, c.index)

    def _context(self, c: Command) -> tuple[bytearray, int, int]:
        f = c.fields
        ctx = self.contexts[f["cls"]]
        if f["offset"] + f["length"] > len(ctx):
            raise fail(DECO_CONTEXT_LENGTH, c.index)
        return ctx, f["offset"], f["length"]

    def _load(self, c: Command) -> None:
        f = c.fields
        reg, cls = f["reg_name"], f["cls"]
        if reg == "context" and cls in (1, 2):
            ctx, offset, length = self._context(c)
            ctx[offset : offset + length] = self._source(c, length)
        elif reg == "key" and cls in (1, 2) and f["offset"] == 0:
            self.keys[cls] = self._source(c, f["length"])
        elif reg == "clear-written" and f["length"] == 4:
            self._clear_written(int.from_bytes(self._source(c, 4), self.order))
        elif reg.startswith(("pkha-", "math")):
            self._source(c, f["length"])  # sizes follow the data here; MATH is not modelled
        else:
            raise fail(DECO_INVALID_LOAD, c.index)

    def _clear_written(self, value: int) -> None:
        if value & (CLRW_C1MODE | CLRW_RESET_C1):
            self.c1, self.c1_mode = None, None
        if value & CLRW_C1CTX:
            self.contexts[1][:] = bytes(CONTEXT_BYTES[1])
        if value & CLRW_C1KEY:
            self.keys[1] = b""
        if value & (CLRW_C2MODE | CLRW_RESET_C2):
            self.c2 = None
        if value & CLRW_C2CTX:
            self.contexts[2][:] = bytes(CONTEXT_BYTES[2])
        if value & CLRW_C2KEY:
            self.keys[2] = b""
        if value & CLRW_RESET_OFIFO:
            self.out.clear()
        if value & CLRW_RESET_IFIFO:
            self.waiting.clear()

    def _store(self, c: Command) -> None:
        f = c.fields
        if f["reg_name"] != "context" or f["cls"] not in (1, 2) or f["imm"]:
            raise fail(DECO_INVALID_STORE, c.index)
        ctx, offset, length = self._context(c)
        self.bus.put(self._destination(c, length), bytes(ctx[offset : offset + length]), c.index)

    # ------------------------------------------------------------------ FIFO LOAD / STORE

    def _fifo_load(self, c: Command) -> None:
        f = c.fields
        kind = f["type_name"]
        if kind in _PK_REGS:
            setattr(self.pk, _PK_REGS[kind], self._source(c, f["length"]))
            return
        if kind not in _DATA_KINDS:
            raise fail(DECO_INVALID_FIFO_LOAD, c.index)
        data = self._source(c, f["length"])
        if f["cls"] & 1:
            if self.c1 is None:
                self.waiting.append((c, data))
            else:
                self._class1(c, data)
        if f["cls"] & 2 and kind != "MSG1OUT2":
            self._class2(c, _DATA_KINDS[kind], data, f["last2"])

    def _class1(self, c: Command, data: bytes) -> None:
        assert self.c1 is not None
        f = c.fields
        try:
            # Output leaves before the stream ends: a GCM decrypt has written its plaintext by
            # the time the ICV compare fails.
            out = self.c1.feed(_DATA_KINDS[f["type_name"]], data)
            self.out.push(out)
            if f["last1"]:
                tail = self.c1.finish()
                self.out.push(tail)
                out += tail
        except ChaError as err:
            raise JobStop(err.status(c.index)) from None
        if f["type_name"] == "MSG1OUT2":
            self._class2(c, "msg", out, f["last2"])

    def _class2(self, c: Command, kind: str, data: bytes, last: bool) -> None:
        if self.c2 is None:
            raise JobStop(status.ccb(status.CHA_MD, status.ERR_SEQUENCE, c.index))
        try:
            self.c2.feed(kind, data)
            if last:
                self.c2.finish()
        except ChaError as err:
            raise JobStop(err.status(c.index)) from None

    def _fifo_store(self, c: Command) -> None:
        f = c.fields
        kind, length = f["type_name"], f["length"]
        if kind == "MESSAGE_DATA":
            self.out.expect(self._destination(c, length), length, c.index)
        elif kind == "SKIP":
            self.out.expect(None, length, c.index)
        elif kind in ("RNGSTORE", "RNGFIFO"):
            handle = self.rng_handle if self.c1_mode == "RNG" else 0
            rng = self.ctx.rng
            if not rng.is_instantiated(handle):
                raise JobStop(status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, c.index))
            self.used("RNG")
            dest = self.bus.writable(self._destination(c, length), length, c.index)
            self.bus.put(dest, rng.generate(length, handle), c.index)
        elif kind in _PK_STORES:
            value = getattr(self.pk, _PK_STORES[kind])
            data = value[-length:] if length else b""
            if len(value) > length and any(value[:-length] if length else value):
                raise JobStop(status.ccb(status.CHA_PK, status.ERR_PKBMEMSZ, c.index))
            dest = self.bus.writable(self._destination(c, length), length, c.index)
            self.bus.put(dest, data.rjust(length, b"\0"), c.index)
        else:
            raise fail(DECO_INVALID_FIFO_STORE, c.index)
