"""DECO 0 under direct software control: DECORR, DECORSR and DECO 0's register page.

Linux's ctrl.c runs the RNG instantiation and deinstantiation descriptors this way, before any
job ring is set up: DECORSR |= JR0 and wait for VALID (only with SCFGR.VIRT_EN or on i.MX8M),
DECORR |= RQD0ENABLE and wait for DEN0, write the words into DECO 0's descriptor buffer (+0xA00),
write WHL (and FOUR for four words or more) to its job queue control (+0x800), poll the debug
register (+0xE04, or +0xE3C from era 10) until VALID clears or the state reads 0xD, read the
status at +0x810 (masked with 0xF00000FF), and clear RQD0ENABLE (and JR0).

The model's choices (the manuals are not public):
- The grant is immediate: DEN0 (and DECORSR.VALID) read set as soon as the request bit is
  written, and clear when it is cleared. While software holds DECO 0, a part with one DECO
  (i.MX7D) runs no job-ring job: added jobs wait and run when DECO 0 is released.
- A WHL write runs the words in the descriptor buffer at once, synchronously; writes without
  WHL, or while software does not hold DECO 0, are only stored. VALID never reads set after the
  write returns. The status word goes to +0x810 in full (Linux masks it); the debug registers
  read state 0xD ("host error", VALID clear) after a descriptor that ended in error, else 0.
- The descriptor buffer is what DECO 0 runs: the words sit there, not in DMA memory, and read back
  as written. Pointers inside the descriptor still address DMA memory. Class key and context
  registers of the DECO page (and everything else in it) read 0: keys never leave the model.
- Only DECO 0 is under software control; the pages of other DECOs read 0 and ignore writes.
"""

from __future__ import annotations

from collections.abc import Callable

from cryptoffload.caam import regs
from cryptoffload.caam.model.memory import DmaMemory

__all__ = ["DESCBUF_WINDOW", "DecoControl", "DescbufWindow"]

#: The bus address the model gives DECO 0's descriptor buffer while it runs it: below every DMA
#: allocation (DmaMemory starts at 0x80000000), so no buffer can overlap it.
DESCBUF_WINDOW = 0x1000
_DESCBUF_BYTES = 4 * regs.DECO_DESCBUF_WORDS
#: Registers of the page that keep what software writes; the rest of the page reads 0.
_STORED = (regs.DECO_JR_CTL_HI, regs.DECO_JR_CTL_LO, regs.DECO_DESC_ADDR_HI, regs.DECO_DESC_ADDR_LO)
#: A HALT with a zero status byte: with 0, the status Linux reads as success.
HALT_OK = 0x7000_0000


class DescbufWindow:
    """DMA memory as a directly run descriptor sees it: the descriptor buffer at DESCBUF_WINDOW."""

    def __init__(self, memory: DmaMemory, descbuf: bytearray) -> None:
        self._memory = memory
        self._descbuf = descbuf

    def _inside(self, addr: int, n: int) -> bool:
        return addr >= DESCBUF_WINDOW and addr + n <= DESCBUF_WINDOW + len(self._descbuf)

    def read(self, addr: int, n: int) -> bytes:
        if self._inside(addr, n):
            start = addr - DESCBUF_WINDOW
            return bytes(self._descbuf[start : start + n])
        return self._memory.read(addr, n)

    def write(self, addr: int, data: bytes) -> None:
        data = bytes(data)
        if self._inside(addr, len(data)):
            start = addr - DESCBUF_WINDOW
            self._descbuf[start : start + len(data)] = data
            return
        self._memory.write(addr, data)

    def valid(self, addr: int, n: int) -> bool:
        return self._inside(addr, n) or self._memory.valid(addr, n)

    def alloc(self, size: int, align: int = 16) -> int:
        return self._memory.alloc(size, align)


class DecoControl:
    """DECORR/DECORSR and DECO 0's page; ``run(window)`` runs the buffer, returns the status."""

    def __init__(
        self, memory: DmaMemory, byteorder: str, run: Callable[[DescbufWindow], int]
    ) -> None:
        self._memory = memory
        self._order = byteorder
        self._run = run
        self.power_on()

    def power_on(self) -> None:
        self.decorr = 0
        self.decorsr = 0
        self.descbuf = bytearray(_DESCBUF_BYTES)
        self.page: dict[int, int] = {}  # plain storage: JR control, descriptor address
        self.op_status_hi = 0
        self.state = 0  # DECO state the debug registers show

    @property
    def held(self) -> bool:
        """Whether software holds DECO 0 (DECORR.RQD0ENABLE granted)."""
        return bool(self.decorr & regs.DECORR_RQD0ENABLE)

    # Controller page: DECORR and DECORSR.

    def read_ctrl(self, reg: int) -> int | None:
        """DECORR or DECORSR, or None for another controller register."""
        if reg == regs.DECORR:
            return self.decorr | (regs.DECORR_DEN0 if self.held else 0)
        if reg == regs.DECORSR:
            valid = regs.DECORSR_VALID if self.decorsr & regs.DECORSR_JR0 else 0
            return self.decorsr | valid
        return None

    def write_ctrl(self, reg: int, value: int) -> bool:
        """Take a write to DECORR or DECORSR; False for another controller register."""
        if reg == regs.DECORR:
            self.decorr = value & regs.DECORR_RQD0ENABLE
            return True
        if reg == regs.DECORSR:
            self.decorsr = value & regs.DECORSR_JR0
            return True
        return False

    # DECO 0's page.

    def read_page(self, reg: int) -> int:
        """A register of DECO 0's page."""
        if regs.DECO_DESCBUF <= reg < regs.DECO_DESCBUF + _DESCBUF_BYTES:
            start = reg - regs.DECO_DESCBUF
            return int.from_bytes(self.descbuf[start : start + 4], self._order)
        if reg == regs.DECO_OP_STATUS_HI:
            return self.op_status_hi
        if reg == regs.DECO_DESC_DBG:
            return self.state << regs.DESC_DBG_STATE_SHIFT
        if reg == regs.DECO_DBG_EXEC:
            return self.state << regs.DBG_EXEC_STATE_SHIFT
        return self.page.get(reg, 0)

    def write_page(self, reg: int, value: int) -> None:
        """A write to DECO 0's page; WHL in the job queue control runs the descriptor buffer."""
        if regs.DECO_DESCBUF <= reg < regs.DECO_DESCBUF + _DESCBUF_BYTES:
            start = reg - regs.DECO_DESCBUF
            self.descbuf[start : start + 4] = value.to_bytes(4, self._order)
        elif reg in _STORED:
            self.page[reg] = value
            if reg == regs.DECO_JR_CTL_HI and value & regs.DECO_JQCR_WHL and self.held:
                self._start()

    def _start(self) -> None:
        word = self._run(DescbufWindow(self._memory, self.descbuf))
        self.op_status_hi = word
        ok = word & regs.DECO_OP_STATUS_HI_ERR_MASK in (0, HALT_OK)
        self.state = 0 if ok else regs.DECO_STATE_HOST_ERR
