"""The device file: a board's physical ranges (register block, control page, DMA pool) in one file.

The file stands for physical memory from ``origin`` (its first byte): the register block sits
at the part's CAAM base, the device's control page right after the block (what a board does not
have: the posted-write queue, the doorbell flag and the device's own figures), and the DMA pool
where a ``mem=`` reservation would put it. Everything between is a hole (a sparse file).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptoffload.caam import regs

__all__ = [
    "CONTROL_SIZE",
    "LAYOUTS",
    "MAGIC",
    "QUEUE_RECORDS",
    "Control",
    "Layout",
    "create",
    "layout_for",
    "pool_room",
]

MAGIC = 0x43414D44_45564943  # "CAMDEVIC"
#: Posted register writes the queue holds before a writer waits for the device.
QUEUE_RECORDS = 4096
CONTROL_SIZE = 0x10000
DEFAULT_POOL = 32 << 20


@dataclass(frozen=True)
class Layout:
    """Where the register block, the control page and the pool are (physical addresses)."""

    part: str
    byteorder: str
    registers: int
    pool: int
    pool_size: int = DEFAULT_POOL

    @property
    def control(self) -> int:
        return self.registers + regs.BLOCK_SIZE

    @property
    def origin(self) -> int:
        return min(self.registers, self.pool)

    @property
    def end(self) -> int:
        return max(self.control + CONTROL_SIZE, self.pool + self.pool_size)


#: T2080: CCSR at 0xFE000000 (the 32-bit map), the SEC at CCSR + 0x300000, a pool reserved
#: with mem= below 2 GiB. i.MX7D: the CAAM at 0x30900000, DRAM from 0x80000000, a pool at
#: 0xB0000000 (a no-map reserved-memory range).
LAYOUTS = {
    "t2080": Layout("t2080", "big", 0xFE30_0000, 0x7E00_0000),
    "t1040": Layout("t1040", "big", 0xFE30_0000, 0x7E00_0000),
    "imx7d": Layout("imx7d", "little", 0x3090_0000, 0xB000_0000),
}


def layout_for(part: str, pool_size: int = DEFAULT_POOL) -> Layout:
    """The layout of ``part`` with a pool of ``pool_size`` bytes (a multiple of 64 KiB, at most
    :func:`pool_room`'s)."""
    base = _base(part)
    if pool_size <= 0 or pool_size % 0x10000:
        raise ValueError(f"pool size must be a positive multiple of 64 KiB, got {pool_size}")
    room, end = pool_room(part)
    if pool_size > room:
        raise ValueError(
            f"a pool of {pool_size} bytes does not fit the {part} layout: the pool at "
            f"{base.pool:#x} must end by {end}, so it holds at most {room} bytes"
        )
    return Layout(base.part, base.byteorder, base.registers, base.pool, pool_size)


def pool_room(part: str) -> tuple[int, str]:
    """The largest pool ``part``'s layout holds, and where and why it must end: at the register
    block above it, or at the top of the addresses the part's pointers reach (32 bits on the
    i.MX7D: the driver could not give the device memory beyond)."""
    from cryptoffload.caam.model.parts import PARTS

    base = _base(part)
    bits = 36 if regs.long_pointers_supported(PARTS[part].id_registers[regs.CTPR_MS]) else 32
    ends = [(1 << bits, f"the top of its {bits}-bit addresses")]
    if base.registers > base.pool:
        ends.append((base.registers, "its register block"))
    end, why = min(ends)
    return (end - base.pool) & ~0xFFFF, f"{end:#x}, {why}"


def _base(part: str) -> Layout:
    try:
        return LAYOUTS[part]
    except KeyError:
        known = ", ".join(LAYOUTS)
        raise ValueError(f"no device layout for part {part!r}; parts: {known}") from None


def create(path: str, layout: Layout) -> None:
    """A new sparse file covering ``layout`` (read and write for this user only)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, layout.end - layout.origin)
    except BaseException:
        os.unlink(path)  # ours: made just now (O_EXCL)
        raise
    finally:
        os.close(fd)


class Control:
    """The control page as 64-bit words (native order: only this machine's processes share it).

    Words: magic, posted (writes the driver queued), applied (writes the device applied),
    sleeping (the device waits on its doorbell), ready, device pid, then the device's figures
    (FIGURES, from word 8), then the queue of (offset, value) records from ``QUEUE_AT``.
    """

    MAGIC, POSTED, APPLIED, SLEEPING, READY, PID = range(6)
    FIGURES = (
        "jobs",
        "bytes",
        "modelled_ns",
        "compute_ns",
        "busy_ns",
        "interrupts",
        "first_start_ns",
        "last_done_ns",
        "wakeups",
        "work_ns",
    )
    FIGURES_AT = 8
    QUEUE_AT = 64  # in 64-bit words: byte 512

    def __init__(self, view: memoryview) -> None:
        self.words = view.cast("Q")
        self.queue = view[self.QUEUE_AT * 8 : self.QUEUE_AT * 8 + QUEUE_RECORDS * 8].cast("I")

    def figures(self) -> dict[str, int]:
        """The device's figures as it last published them."""
        at = self.FIGURES_AT
        return {name: self.words[at + i] for i, name in enumerate(self.FIGURES)}

    def release(self) -> None:
        self.queue.release()
        self.words.release()
