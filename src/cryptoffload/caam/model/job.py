"""The DECO's registers and data paths for one job: keys, contexts, FIFOs, sequences, PKHA.

``JobState`` carries what the commands that move data (KEY, LOAD, STORE, FIFO LOAD/STORE, SEQ
pointers, Clear-Written, the DECO registers) read and write; ``operations`` adds the
OPERATIONs, ``math`` and ``move`` the MATH and MOVE commands, ``deco`` the jumps and run loop.

Choices where the sources stop:
- VLF commands take VSIL / VSOL as they stand and leave them unchanged (Linux rewrites them
  before every use); a SEQ LOAD / STORE whose VLF length passes the register: DECO 0x15.
- SEQ FIFO STORE of type SKIP steps the output sequence and writes nothing (the AAD area of an
  AEAD's output stays as it was); a FIFO STORE SKIP with a pointer does nothing.
- SEQ FIFO LOAD of class 0 consumes input bytes without reading them.
- LOADs into the DECO: MATH0..MATH3 are 8-byte registers with byte offsets, one after the other
  (32 bytes from MATH0), DPOVRD a 4-byte register, DESCBUF the descriptor buffer at a word
  offset; a DECOCTRL LOAD (IMM, length 0) is accepted and changes nothing the model keeps
  (sharing, automatic info-FIFO entries). LOAD into the output FIFO queues the bytes as if a
  CHA had produced them (Linux's rfc3686 nonce, moved on into the context).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cryptoffload.caam import status
from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.words import Command
from cryptoffload.caam.model.cha import AesUnit, ChaError, MdUnit
from cryptoffload.caam.model.dma import Extent, JobBus, JobStop, OutputFifo
from cryptoffload.caam.model.keys import KeyFault, black_size, load_black_key, store_black_key
from cryptoffload.caam.model.math import MathRegisters
from cryptoffload.caam.model.memory import DmaMemory
from cryptoffload.caam.model.pkha import PkhaRegisters
from cryptoffload.caam.model.rng import Rng4
from cryptoffload.caam.model.sequences import Sequence, table_extents

if TYPE_CHECKING:
    from cryptoffload.caam.model.parts import Part

__all__ = ["DESCBUF_BYTES", "JobContext", "JobState", "fail"]

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
DESCBUF_BYTES = 4 * E.MAX_DESCRIPTOR_WORDS
DPOVRD_BYTES = 4

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
_UNSUPPORTED_SEQ_FLAGS = {"INL", "RBS", "RJD", "RST", "EWS", "SOP"}


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
        self.seq_in = Sequence(self.bus, self.order)
        self.seq_out = Sequence(self.bus, self.order)
        self.math = MathRegisters()
        self.vsil = 0  # VARSEQINLEN
        self.vsol = 0  # VARSEQOUTLEN
        self.dpovrd = 0
        self.descbuf = bytearray(DESCBUF_BYTES)  # words most significant byte first
        self.chas: list[str] = []

    def used(self, cha: str) -> None:
        if cha not in self.chas:
            self.chas.append(cha)

    # ------------------------------------------------------------------ data in and out

    def _extents(self, c: Command, length: int, seq: Sequence) -> list[Extent]:
        """Where the bytes of a command come from or go: its sequence, S/G table or pointer."""
        if c.name.startswith("SEQ_"):
            return seq.take(length, c.index)
        if c.fields.get("sgf"):
            return table_extents(self.bus, self.order, c.fields["pointer"], length, c.index)
        return [(c.fields["pointer"], length)]

    def _source(self, c: Command, length: int) -> bytes:
        """The bytes a KEY, LOAD or FIFO LOAD brings in: immediate, pointer or input sequence."""
        data = c.fields.get("data")
        if data is not None:
            return bytes(data)
        return self.bus.gather(self._extents(c, length, self.seq_in), c.index)

    def _destination(self, c: Command, length: int) -> list[Extent]:
        return self._extents(c, length, self.seq_out)

    def _vlf_length(self, c: Command, register: int, limit: int | None = None) -> int:
        """The length of a command: VSIL / VSOL with VLF, else its length field."""
        if not c.fields.get("vlf"):
            return c.fields["length"]
        if limit is not None and register > limit:
            raise fail(DECO_CONTEXT_LENGTH, c.index)
        return register

    def _seq_ptr(self, c: Command) -> None:
        f = c.fields
        flags = set(f["flags"])
        if flags & _UNSUPPORTED_SEQ_FLAGS:
            raise fail(DECO_INVALID_SEQUENCE, c.index)
        seq = self.seq_in if c.name == "SEQ_IN_PTR" else self.seq_out
        if f["pointer"] is not None:
            seq.set(f["pointer"], f["length"], "SGF" in flags)
        elif not seq.is_set:
            raise fail(DECO_INVALID_SEQUENCE, c.index)
        elif "RTO" in flags:  # restore: back to the sequence's start
            seq.rewind(f["length"])
        else:  # PRE: a new sequence from where the previous one stands
            seq.follow(f["length"])

    # ------------------------------------------------------------------ KEY, LOAD, STORE

    def _key(self, c: Command) -> None:
        f = c.fields
        if f["tk"] or (f["ekt"] and not f["enc"]) or (f["enc"] and f["imm"]):
            raise fail(DECO_INVALID_KEY, c.index)
        if f["dest"] not in ("class-key", "pkha-e") or (
            f["dest"] == "class-key" and f["cls"] not in (1, 2)
        ):
            raise fail(DECO_INVALID_KEY, c.index)
        if f["enc"]:  # a black key (``keys``): its covered form is read, the key is kept
            black = self._source(c, black_size(f["length"], ccm=f["ekt"]))
            try:
                data = load_black_key(
                    self.ctx.rng.keys, black, f["length"], ccm=f["ekt"], index=c.index
                )
            except KeyFault as err:
                raise JobStop(err.status) from None
        else:
            data = self._source(c, f["length"])
        if f["dest"] == "class-key":
            self.keys[f["cls"]] = data
        else:
            self.pk.e = data

    def _context(self, c: Command, length: int) -> tuple[bytearray, int, int]:
        f = c.fields
        ctx = self.contexts[f["cls"]]
        if f["offset"] + length > len(ctx):
            raise fail(DECO_CONTEXT_LENGTH, c.index)
        return ctx, f["offset"], length

    def _load(self, c: Command) -> None:
        f = c.fields
        reg, cls = f["reg_name"], f["cls"]
        length = self._vlf_length(c, self.vsil, 0xFF)
        if reg == "context" and cls in (1, 2):
            ctx, offset, length = self._context(c, length)
            ctx[offset : offset + length] = self._source(c, length)
        elif reg == "key" and cls in (1, 2) and f["offset"] == 0:
            self.keys[cls] = self._source(c, length)
        elif reg == "clear-written" and length == 4:
            self._clear_written(int.from_bytes(self._source(c, 4), self.order))
        elif reg == "output-fifo":
            self.out.push(self._source(c, length))
        elif reg.startswith("pkha-"):
            self._source(c, length)  # sizes follow the data here
        elif cls == 3:
            self._load_deco(c, reg, length)
        else:
            raise fail(DECO_INVALID_LOAD, c.index)

    def _load_deco(self, c: Command, reg: str, length: int) -> None:
        offset = c.fields["offset"]
        if reg == "decoctrl":
            if not c.fields["imm"] or length:
                raise fail(DECO_INVALID_LOAD, c.index)
        elif reg.startswith("math"):
            data = self._source(c, length)
            if not self.math.write(8 * int(reg[4]) + offset, data):
                raise fail(DECO_INVALID_LOAD, c.index)
        elif reg == "dpovrd" and offset + length <= DPOVRD_BYTES:
            area = bytearray(self.dpovrd.to_bytes(DPOVRD_BYTES, "big"))
            area[offset : offset + length] = self._source(c, length)
            self.dpovrd = int.from_bytes(area, "big")
        elif reg == "descbuf" and 4 * offset + length <= DESCBUF_BYTES:
            self.descbuf[4 * offset : 4 * offset + length] = self._source(c, length)
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
        if f["imm"] or (f["pointer"] is None and not c.name.startswith("SEQ_")):
            raise fail(DECO_INVALID_STORE, c.index)
        length = self._vlf_length(c, self.vsol, 0xFF)
        offset, reg = f["offset"], f["reg_name"]
        data: bytes | None = None
        if reg == "context" and f["cls"] in (1, 2):
            ctx, offset, length = self._context(c, length)
            data = bytes(ctx[offset : offset + length])
        elif f["cls"] == 3 and reg.startswith("math"):
            data = self.math.read(8 * int(reg[4]) + offset, length)
        elif f["cls"] == 3 and reg == "dpovrd" and offset + length <= DPOVRD_BYTES:
            data = self.dpovrd.to_bytes(DPOVRD_BYTES, "big")[offset : offset + length]
        elif f["cls"] == 3 and reg == "descbuf" and 4 * offset + length <= DESCBUF_BYTES:
            data = bytes(self.descbuf[4 * offset : 4 * offset + length])
        if data is None:
            raise fail(DECO_INVALID_STORE, c.index)
        self.bus.scatter(self._destination(c, length), data, c.index)

    # ------------------------------------------------------------------ FIFO LOAD / STORE

    def _fifo_load(self, c: Command) -> None:
        f = c.fields
        kind = f["type_name"]
        length = self._vlf_length(c, self.vsil)
        if f.get("skip"):  # SEQ FIFO LOAD class 0: consume the input, feed nothing
            self.seq_in.take(length, c.index)
            return
        if kind in _PK_REGS:
            setattr(self.pk, _PK_REGS[kind], self._source(c, length))
            return
        if kind not in _DATA_KINDS:
            raise fail(DECO_INVALID_FIFO_LOAD, c.index)
        data = self._source(c, length)
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
        kind = f["type_name"]
        length = self._vlf_length(c, self.vsol)
        if kind == "MESSAGE_DATA":
            self.out.expect(self._destination(c, length), c.index)
        elif kind == "SKIP":
            if c.name.startswith("SEQ_"):
                self.seq_out.take(length, c.index)
        elif kind in ("RNGSTORE", "RNGFIFO"):
            handle = self.rng_handle if self.c1_mode == "RNG" else 0
            rng = self.ctx.rng
            if not rng.is_instantiated(handle):
                raise JobStop(status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, c.index))
            self.used("RNG")
            extents = self._destination(c, length)
            self.bus.check(extents, c.index)
            self.bus.scatter(extents, rng.generate(length, handle), c.index)
        elif kind in ("KEY_KEK", "KEY_CCM_JKEK"):  # a key register leaves only black (``keys``)
            key = self.keys.get(f["cls"], b"")
            if not key or length != len(key):
                raise fail(DECO_INVALID_FIFO_STORE, c.index)
            rng = self.ctx.rng
            draw = (lambda n: rng.generate(n, 0)) if rng.is_instantiated(0) else None
            ccm = kind == "KEY_CCM_JKEK"
            try:
                black = store_black_key(rng.keys, key, ccm=ccm, draw=draw, index=c.index)
            except KeyFault as err:
                raise JobStop(err.status) from None
            self.bus.scatter(self._destination(c, len(black)), black, c.index)
        elif kind in _PK_STORES:
            value = getattr(self.pk, _PK_STORES[kind])
            data = value[-length:] if length else b""
            if len(value) > length and any(value[:-length] if length else value):
                raise JobStop(status.ccb(status.CHA_PK, status.ERR_PKBMEMSZ, c.index))
            extents = self._destination(c, length)
            self.bus.check(extents, c.index)
            self.bus.scatter(extents, data.rjust(length, b"\0"), c.index)
        else:
            raise fail(DECO_INVALID_FIFO_STORE, c.index)
