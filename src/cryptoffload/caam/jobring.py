"""Just enough of a job ring driver for the workbench: discovery, ring 0, one job at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptoffload.caam import regs
from cryptoffload.caam.status import SRC_JUMP_HALT_COND, SRC_JUMP_HALT_USER, SRC_NONE, Status

__all__ = ["RING", "RNG_INSTANTIATE", "RingDriver", "RingError", "instantiate_rng"]

#: The brief's RNG4 instantiate recipe for state handle 0 (a driver runs it once after reset).
RNG_INSTANTIATE = (
    0xB0800007,
    0x82500004,  # RNG, state INIT, handle 0
    0xA2000001,  # JUMP: wait for class 1 done
    0x10880004,  # LOAD immediate Clear-Written
    0x00000001,
    0x82501000,  # RNG, secure key generation
    0xA2800000,  # HALT
)
RING = 0
RING_DEPTH = 4


class RingError(ValueError):
    """The ring cannot be used as asked, or a job did not come back as a driver expects."""


class RingDriver:
    """Discovery, ring 0 set up through the registers, then one job at a time, polled."""

    def __init__(self, model: Any, *, long_pointers: bool) -> None:
        self.model = model
        self.base = regs.jr_base(RING)
        caps = regs.discover(lambda off: model.read32(self.base + off))
        self.order = caps.byteorder
        if long_pointers:
            if not caps.long_pointers:
                raise RingError(f"{model.part.name} cannot use long pointers (CTPR_MS.PS is clear)")
            model.write32(regs.MCFGR, model.read32(regs.MCFGR) | regs.MCFGR_LONG_PTR)
        self.pointer_words = 2 if long_pointers else 1
        mem = model.memory
        self.inring = mem.alloc(RING_DEPTH * 4 * self.pointer_words)
        self.outring = mem.alloc(RING_DEPTH * 4 * (self.pointer_words + 1))
        for reg, value in (
            (regs.IRBAR_HI, self.inring >> 32),
            (regs.IRBAR_LO, self.inring & 0xFFFFFFFF),
            (regs.ORBAR_HI, self.outring >> 32),
            (regs.ORBAR_LO, self.outring & 0xFFFFFFFF),
            (regs.IRSR, RING_DEPTH),
            (regs.ORSR, RING_DEPTH),
            (regs.JRCFGR_LS, regs.JRCFGR_IMSK),  # polled, as a user-space driver does
        ):
            self.write(reg, value)
        self.in_index = 0
        self.out_index = 0

    def write(self, reg: int, value: int) -> None:
        self.model.write32(self.base + reg, value)

    def read(self, reg: int) -> int:
        return self.model.read32(self.base + reg)

    def _pointer(self, addr: int) -> bytes:
        parts = [addr >> 32, addr & 0xFFFFFFFF] if self.pointer_words == 2 else [addr]
        return b"".join(p.to_bytes(4, self.order) for p in parts)

    def put_words(self, words: Sequence[int], addr: int | None = None) -> int:
        """Write ``words`` in the part's byte order at ``addr`` (None: a new region)."""
        if addr is None:
            addr = self.model.memory.alloc(4 * len(words))
        self.model.memory.write(addr, b"".join(w.to_bytes(4, self.order) for w in words))
        return addr

    def run(self, desc: int) -> int:
        """Enqueue one descriptor, poll for its completion, return the status from the entry."""
        if self.read(regs.IRSAR) == 0:
            raise RingError("job ring 0 has no free slot")
        entry = self._pointer(desc)
        self.model.memory.write(self.inring + self.in_index * len(entry), entry)
        self.in_index = (self.in_index + 1) % RING_DEPTH
        self.write(regs.IRJAR, 1)
        if self.read(regs.ORSFR) == 0:
            intr = self.read(regs.JRINTR)
            raise RingError(f"the job did not complete (JRINTR 0x{intr:08x})")
        size = 4 * (self.pointer_words + 1)
        raw = self.model.memory.read(self.outring + self.out_index * size, size)
        self.out_index = (self.out_index + 1) % RING_DEPTH
        self.write(regs.ORJRR, 1)
        got = [int.from_bytes(raw[i : i + 4], self.order) for i in range(0, size, 4)]
        back = (got[0] << 32 | got[1]) if self.pointer_words == 2 else got[0]
        if back != desc:
            raise RingError(f"the output ring returned descriptor 0x{back:x}, not 0x{desc:x}")
        return got[-1]


def instantiate_rng(driver: RingDriver) -> int:
    word = driver.run(driver.put_words(RNG_INSTANTIATE))
    source = word >> 28
    # A HALT at the end may report 0 or a jump-halt source with a zero low byte (brief).
    halted_ok = source in (SRC_NONE, SRC_JUMP_HALT_USER, SRC_JUMP_HALT_COND) and not word & 0xFF
    rdsta = driver.model.read32(regs.RDSTA)
    if not halted_ok or not rdsta & regs.RDSTA_IF0:
        raise RingError(
            f"RNG4 instantiation returned {Status(word)}, RDSTA 0x{rdsta:08x}; "
            "try --no-rng-instantiate"
        )
    return rdsta
