"""DMA memory of the CAAM model: a bump allocator of physical addresses below 4 GiB."""

from __future__ import annotations

import bisect

#: Where allocations start: a page-aligned address, as a range reserved with ``mem=`` would be.
BASE = 0x8000_0000
LIMIT = 0x1_0000_0000


class DmaError(Exception):
    """An access outside allocated memory: what a bad DMA address does on the bus."""

    def __init__(self, addr: int, length: int) -> None:
        super().__init__(f"DMA access to 0x{addr:x}..0x{addr + length:x} outside allocated memory")
        self.addr = addr
        self.length = length


class DmaMemory:
    """Allocated regions of physical memory; every access must fall inside one region."""

    def __init__(self, base: int = BASE, limit: int = LIMIT) -> None:
        self._next = base
        self._limit = limit
        self._starts: list[int] = []
        self._regions: dict[int, bytearray] = {}

    def alloc(self, size: int, align: int = 16) -> int:
        """A new zeroed region of ``size`` bytes; returns its physical address."""
        if size <= 0:
            raise ValueError(f"allocation size must be positive, got {size}")
        if align <= 0 or align & (align - 1):
            raise ValueError(f"alignment must be a power of two, got {align}")
        addr = (self._next + align - 1) & ~(align - 1)
        if addr + size > self._limit:
            raise MemoryError(
                f"DMA memory exhausted: {size} bytes do not fit below 0x{self._limit:x}"
            )
        # A guard gap after each region, so running off its end faults instead of landing in the
        # next one.
        self._next = addr + size + 16
        bisect.insort(self._starts, addr)
        self._regions[addr] = bytearray(size)
        return addr

    def _locate(self, addr: int, length: int) -> tuple[bytearray, int]:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            start = self._starts[i]
            region = self._regions[start]
            offset = addr - start
            if length >= 0 and offset + length <= len(region):
                return region, offset
        raise DmaError(addr, length)

    def write(self, addr: int, data: bytes) -> None:
        """Copy ``data`` into memory at ``addr``."""
        data = bytes(data)
        region, offset = self._locate(addr, len(data))
        region[offset : offset + len(data)] = data

    def read(self, addr: int, n: int) -> bytes:
        """``n`` bytes from ``addr``."""
        region, offset = self._locate(addr, n)
        return bytes(region[offset : offset + n])

    def valid(self, addr: int, n: int) -> bool:
        """Whether ``n`` bytes at ``addr`` lie inside one allocated region."""
        try:
            self._locate(addr, n)
        except DmaError:
            return False
        return True
