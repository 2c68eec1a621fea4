"""One CAAM job ring through its registers: reset, rings in DMA memory, entries in and out."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

from cryptoffload.caam import regs

__all__ = ["DESC_BYTES", "JobRing", "RingStuck"]

#: Largest job descriptor: the DECO's descriptor buffer holds 64 words.
DESC_BYTES = 64 * 4
_MASK32 = 0xFFFF_FFFF


class RingStuck(RuntimeError):
    """The ring did not halt or come out of reset within its bound."""


class JobRing:
    """Job ring ``index``: its registers, its input and output rings, a pool of descriptor slots.

    Not thread-safe: the driver holds its lock around every call. Entries are packed as the
    model and Linux's ``jr_outentry`` lay them out: an input entry is one pointer, an output
    entry a pointer then the 32-bit status; a long pointer is two words, most significant
    first, each in the block's byte order.
    """

    def __init__(
        self, transport: Any, index: int, depth: int, pointer_size: int, byteorder: str
    ) -> None:
        self.transport = transport
        self.index = index
        self.depth = depth
        self.long = pointer_size == 8
        order = ">" if byteorder == "big" else "<"
        self._in = struct.Struct(order + ("II" if self.long else "I"))
        self._out = struct.Struct(order + ("III" if self.long else "II"))
        base = regs.jr_base(index)
        self._read32: Callable[[int], int] = transport.read32
        self._write32: Callable[[int, int], None] = transport.write32
        self._base = base
        self._irjar = base + regs.IRJAR
        self._orsfr = base + regs.ORSFR
        self._orjrr = base + regs.ORJRR
        self._irsar = base + regs.IRSAR
        self.inring = transport.alloc(depth * self._in.size, 64)
        self.outring = transport.alloc(depth * self._out.size, 64)
        self.slots = transport.alloc(depth * DESC_BYTES, 64)
        self.free_slots = [self.slots + i * DESC_BYTES for i in range(depth - 1, -1, -1)]
        #: JRCFGR_LS as ``arm`` writes it: IMSK (the driver polls), or 0 / ICEN... (interrupts).
        self.cfg = regs.JRCFGR_IMSK
        self.head = 0  # next input entry
        self.tail = 0  # next output entry

    def read(self, reg: int) -> int:
        return self._read32(self._base + reg)

    def write(self, reg: int, value: int) -> None:
        self._write32(self._base + reg, value)

    # Reset and arm -------------------------------------------------------------------------

    def _poll(self, done: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        polls = 0
        while not done():
            polls += 1
            if polls > 64 and time.monotonic() > deadline:
                raise RingStuck(f"job ring {self.index} {what} within {timeout} s")
            if polls > 16:
                time.sleep(min(1e-3, 1e-6 * polls))

    def halt(self, timeout: float) -> None:
        """Interrupts masked, JRCR = RESET, poll until JRINTR shows the halt done."""
        self.write(regs.JRCFGR_LS, regs.JRCFGR_IMSK)
        self.write(regs.JRCR, regs.JRCR_RESET)
        self._poll(
            lambda: self.read(regs.JRINTR) & regs.JRINTR_HALT_MASK == regs.JRINTR_HALT_DONE,
            "did not halt",
            timeout,
        )

    def finish_reset(self, timeout: float) -> None:
        """The second JRCR = RESET, poll until JRCR's RESET bit clears; then arm the ring."""
        self.write(regs.JRCR, regs.JRCR_RESET)
        self._poll(
            lambda: not self.read(regs.JRCR) & regs.JRCR_RESET, "did not leave reset", timeout
        )
        self.write(regs.JRINTR, regs.JRINTR_ERR | regs.JRINTR_JRI)
        self.arm()

    def arm(self) -> None:
        """Ring bases and sizes, JRCFGR_LS = ``cfg`` (IMSK: the driver polls); indices from 0."""
        for reg, value in (
            (regs.IRBAR_HI, self.inring >> 32),
            (regs.IRBAR_LO, self.inring & _MASK32),
            (regs.ORBAR_HI, self.outring >> 32),
            (regs.ORBAR_LO, self.outring & _MASK32),
            (regs.IRSR, self.depth),
            (regs.ORSR, self.depth),
            (regs.JRCFGR_LS, self.cfg),
        ):
            self.write(reg, value)
        self.head = self.tail = 0

    # Entries -------------------------------------------------------------------------------

    def room(self) -> int:
        """IRSAR: input slots the block says are free."""
        return self._read32(self._irsar)

    def add_one(self, desc: int) -> None:
        """One input entry at the head, IRJAR = 1."""
        head = self.head
        entry = self._in.pack(desc >> 32, desc & _MASK32) if self.long else self._in.pack(desc)
        self.transport.write(self.inring + head * self._in.size, entry)
        head += 1
        self.head = 0 if head == self.depth else head
        self._write32(self._irjar, 1)

    def add(self, descs: Sequence[int]) -> None:
        """Input entries for ``descs`` at the head (one write, two when it wraps), IRJAR = n."""
        n = len(descs)
        pack, size, head, depth = self._in.pack, self._in.size, self.head, self.depth
        if self.long:
            data = b"".join([pack(d >> 32, d & _MASK32) for d in descs])
        else:
            data = b"".join([pack(d) for d in descs])
        room = (depth - head) * size
        write = self.transport.write
        if room >= len(data):
            write(self.inring + head * size, data)
        else:
            write(self.inring + head * size, data[:room])
            write(self.inring, data[room:])
        self.head = (head + n) % depth
        self._write32(self._irjar, n)

    def take(self) -> list[tuple[int, int]]:
        """Every completion in the output ring, (descriptor, status), then ORJRR = n."""
        n = self._read32(self._orsfr)
        if not n:
            return []
        out, tail, depth = self._out, self.tail, self.depth
        size = out.size
        read = self.transport.read
        if n == 1:
            raw = read(self.outring + tail * size, size)
            tail += 1
        else:
            if n > depth:
                n = depth
            first = depth - tail
            if n <= first:
                raw = read(self.outring + tail * size, n * size)
            else:
                raw = read(self.outring + tail * size, first * size)
                raw += read(self.outring, (n - first) * size)
            tail += n
        self.tail = tail if tail < depth else tail - depth
        self._write32(self._orjrr, n)
        if self.long:
            return [(hi << 32 | lo, word) for hi, lo, word in out.iter_unpack(raw)]
        return list(out.iter_unpack(raw))

    def interrupt_status(self) -> int:
        """JRINTR: ERR with its type, the halt field."""
        return self.read(regs.JRINTR)

    def close(self) -> None:
        for phys in (self.inring, self.outring, self.slots):
            self.transport.free(phys)
