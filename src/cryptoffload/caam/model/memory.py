"""DMA memory of the CAAM model, and the allocator of physical addresses the board pools share."""

from __future__ import annotations

import bisect
import threading
from collections import deque

#: Where allocations start: a page-aligned address, as a range reserved with ``mem=`` would be.
BASE = 0x8000_0000
LIMIT = 0x1_0000_0000
#: Bytes after each region that belong to no region, so running off its end faults.
GUARD = 16

Bytes = bytes | bytearray | memoryview


class DmaError(Exception):
    """An access outside allocated memory: what a bad DMA address does on the bus."""

    def __init__(self, addr: int, length: int) -> None:
        super().__init__(f"DMA access to 0x{addr:x}..0x{addr + length:x} outside allocated memory")
        self.addr = addr
        self.length = length


class Arena:
    """Size-class allocation of addresses in [base, limit), a guard gap after each region.

    A region takes a slot: its size plus ``guard`` bytes, rounded up to a size class (multiples
    of ``granule`` up to 1 KiB, then four classes per power of two, so at most a quarter is lost
    to rounding). Every slot starts on a ``granule`` boundary (a power of two: the cache line on
    a board), so regions never share one. A freed slot waits in its class's list for the next
    region of that class: allocation and free are a list pop and append, without a lock (the
    GIL makes each atomic). New slots are carved first-fit from sorted free holes under a lock;
    when no hole fits, every waiting slot goes back to the holes, merged with its neighbours,
    and the search runs once more, so space freed in one class serves any other.
    """

    def __init__(
        self, base: int, limit: int, *, guard: int = GUARD, granule: int = 64, name: str = "DMA"
    ) -> None:
        if granule <= 0 or granule & (granule - 1) or granule > 256:
            raise ValueError(f"granule must be a power of two up to 256, got {granule}")
        start = (base + granule - 1) & ~(granule - 1)
        if start >= limit:
            raise ValueError(f"empty {name} range 0x{base:x}..0x{limit:x}")
        self.base, self.limit, self.name = base, limit, name
        self.granule, self._guard, self._gmask = granule, guard, granule - 1
        self.lock = threading.Lock()  # carving and flushing; alloc and free do without
        self._holes = [start]  # starts of the free holes, sorted
        self._hole_end = {start: limit}
        self._slots: list[int] = []  # starts of carved slots (live or waiting), sorted
        self._span: dict[int, int] = {}  # slot start -> slot size
        self._waiting: dict[int, list[int]] = {}  # slot size -> freed slots of that size
        self._sizes: dict[int, int] = {}  # live region start (= its slot's) -> size asked for

    def __len__(self) -> int:
        return len(self._sizes)

    @property
    def in_use(self) -> int:
        """Bytes in live regions (the sizes asked for)."""
        return sum(self._sizes.values())

    def alloc(self, size: int, align: int = 16) -> int:
        """The start of a new region of ``size`` bytes aligned to ``align`` (a power of two)."""
        if size <= 0 or align <= 0 or align & (align - 1):
            raise ValueError(
                f"allocation needs a positive size and a power-of-two alignment, got size {size}, "
                f"align {align}"
            )
        need = size + self._guard
        if need <= 1024:
            span = (need + self._gmask) & ~self._gmask
        else:
            step = 1 << (need.bit_length() - 3)
            span = (need + step - 1) & -step
        waiting = self._waiting.get(span)
        if waiting:
            try:
                addr = waiting.pop()
            except IndexError:  # another thread took the last one
                addr = self._carve(size, span, align)
            else:
                if addr & (align - 1):
                    waiting.append(addr)
                    addr = self._carve(size, span, align)
        else:
            addr = self._carve(size, span, align)
        self._sizes[addr] = size
        return addr

    def free(self, addr: int) -> None:
        """Give back the region starting at ``addr`` (an address ``alloc`` returned)."""
        size = self._sizes.pop(addr, None)
        if size is None:
            raise ValueError(
                f"free(0x{addr:x}): no {self.name} region starts there (freed twice, or an "
                "address alloc did not return)"
            )
        self._waiting[self._span[addr]].append(addr)

    def _carve(self, size: int, span: int, align: int) -> int:
        with self.lock:
            addr = self._first_fit(span, (align - 1) | self._gmask)
            if addr is None:
                self._flush()
                addr = self._first_fit(span, (align - 1) | self._gmask)
            if addr is None:
                raise MemoryError(
                    f"{self.name} memory exhausted: {size} bytes aligned to {align} do not fit "
                    f"in the free space of 0x{self.base:x}..0x{self.limit:x} ({self.in_use} "
                    f"bytes in {len(self._sizes)} regions); free regions no longer in use, or "
                    "give a larger range"
                )
            self._span[addr] = span
            self._waiting.setdefault(span, [])
            bisect.insort(self._slots, addr)
        return addr

    def _first_fit(self, span: int, mask: int) -> int | None:
        holes, ends = self._holes, self._hole_end
        for i in range(len(holes)):
            start = holes[i]
            addr = (start + mask) & ~mask
            hole_end = ends[start]
            if addr + span <= hole_end:
                break
        else:
            return None
        end = addr + span
        if addr == start:  # the hole shrinks from below, or goes
            del ends[start]
            if end < hole_end:
                holes[i] = end
                ends[end] = hole_end
            else:
                del holes[i]
        else:  # the alignment padding stays a hole
            ends[start] = addr
            if end < hole_end:
                holes.insert(i + 1, end)
                ends[end] = hole_end
        return addr

    def _flush(self) -> None:
        """Every waiting slot back to the holes, merged with its neighbours (lock held)."""
        for waiting in self._waiting.values():
            while waiting:
                try:
                    addr = waiting.pop()
                except IndexError:
                    break
                span = self._span.pop(addr)
                del self._slots[bisect.bisect_left(self._slots, addr)]
                self._release(addr, addr + span)

    def _release(self, addr: int, end: int) -> None:
        holes, ends = self._holes, self._hole_end
        j = bisect.bisect_left(holes, addr)  # no hole starts inside the slot
        after = j < len(holes) and holes[j] == end
        if j and ends[holes[j - 1]] == addr:  # merges into the hole below
            ends[holes[j - 1]] = ends.pop(end) if after else end
            if after:
                del holes[j]
        elif after:
            holes[j] = addr
            ends[addr] = ends.pop(end)
        else:
            holes.insert(j, addr)
            ends[addr] = end

    def locate(self, addr: int, length: int) -> int:
        """The start of the region holding ``length`` bytes at ``addr``; DmaError if none does."""
        size = self._sizes.get(addr)
        if size is not None and 0 <= length <= size:
            return addr
        try:  # lock-free: a slot seen here is carved or was a moment ago
            slots = self._slots
            start = slots[bisect.bisect_right(slots, addr) - 1]
            size = self._sizes.get(start)
            if size is not None and addr >= start and 0 <= length <= size - (addr - start):
                return start
        except IndexError:
            pass
        with self.lock:  # a carve or flush may have moved the list: look again, for certain
            i = bisect.bisect_right(self._slots, addr) - 1
            if i >= 0 and length >= 0:
                start = self._slots[i]
                size = self._sizes.get(start)
                if size is not None and addr - start + length <= size:
                    return start
        raise DmaError(addr, length)

    def waiting(self) -> int:
        """How many freed slots wait for reuse (for tests and diagnostics)."""
        return sum(len(w) for w in self._waiting.values())

    def holes(self) -> list[tuple[int, int]]:
        """The free holes as (start, end), lowest first, after merging every waiting slot back."""
        with self.lock:
            self._flush()
            return [(start, self._hole_end[start]) for start in self._holes]


def as_bytes(data: Bytes) -> Bytes:
    """``data`` as something whose len() counts bytes, copied only when it is not a buffer."""
    if isinstance(data, bytes | bytearray):
        return data
    try:
        return memoryview(data).cast("B")
    except TypeError:  # not a buffer, or not contiguous
        return bytes(data)


class DmaMemory:
    """Allocated regions of physical memory; every access must fall inside one region.

    Regions come from an ``Arena`` (64-byte aligned, a guard gap after each); a freed region
    faults like any address outside memory. Its space is reused only after ``quarantine`` later
    frees, so that a driver touching memory it freed meets a DmaError, not another job's data.
    """

    def __init__(self, base: int = BASE, limit: int = LIMIT, *, quarantine: int = 64) -> None:
        self.arena = Arena(base, limit)
        self._regions: dict[int, bytearray] = {}
        self._quarantine: deque[int] = deque()
        self._hold = quarantine

    def alloc(self, size: int, align: int = 16) -> int:
        """A new zeroed region of ``size`` bytes; returns its physical address."""
        try:
            addr = self.arena.alloc(size, align)
        except MemoryError:
            if not self._quarantine:
                raise
            self.release_quarantine()
            addr = self.arena.alloc(size, align)
        self._regions[addr] = bytearray(size)
        return addr

    def release_quarantine(self) -> None:
        """Give every freed region still in quarantine back for reuse."""
        held = self._quarantine
        while held:
            try:
                addr = held.popleft()
            except IndexError:
                return
            self.arena.free(addr)

    def free(self, addr: int) -> None:
        """Give back the region at ``addr`` (an address ``alloc`` returned); later access faults."""
        if self._regions.pop(addr, None) is None:
            raise ValueError(
                f"free(0x{addr:x}): no DMA region starts there (freed twice, or an address "
                "alloc did not return)"
            )
        held = self._quarantine
        held.append(addr)
        if len(held) > self._hold:
            try:
                addr = held.popleft()
            except IndexError:  # another thread released it
                return
            self.arena.free(addr)

    def _locate(self, addr: int, length: int) -> tuple[bytearray, int]:
        region = self._regions.get(addr)
        if region is not None and 0 <= length <= len(region):
            return region, 0
        start = self.arena.locate(addr, length)
        region = self._regions.get(start)
        if region is None:  # freed (in quarantine, or a moment ago)
            raise DmaError(addr, length)
        return region, addr - start

    def write(self, addr: int, data: Bytes) -> None:
        """Copy ``data`` into memory at ``addr``."""
        data = as_bytes(data)
        n = len(data)
        region, offset = self._locate(addr, n)
        region[offset : offset + n] = data

    def read(self, addr: int, n: int) -> bytes:
        """``n`` bytes from ``addr``."""
        region, offset = self._locate(addr, n)
        return bytes(region[offset : offset + n])

    def read_into(self, addr: int, out: bytearray | memoryview) -> None:
        """Fill ``out`` with the bytes at ``addr``."""
        view = out if type(out) is bytearray else memoryview(out).cast("B")
        n = len(view)
        region, offset = self._locate(addr, n)
        view[:] = memoryview(region)[offset : offset + n]

    def view(self, addr: int, n: int) -> memoryview:
        """A writable view of the ``n`` bytes at ``addr`` (the region itself, not a copy)."""
        region, offset = self._locate(addr, n)
        return memoryview(region)[offset : offset + n]

    def valid(self, addr: int, n: int) -> bool:
        """Whether ``n`` bytes at ``addr`` lie inside one allocated region."""
        try:
            self._locate(addr, n)
        except DmaError:
            return False
        return True
