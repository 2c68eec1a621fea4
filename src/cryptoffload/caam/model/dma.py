"""A job's DMA: memory reads and writes with DECO DMA errors, and the output FIFO's stores.

Data moves to and from memory in extents, ``(address, length)`` pieces: one for a flat buffer,
one per table entry touched when a sequence or pointer is a sec4 S/G table.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptoffload.caam import status
from cryptoffload.caam.model.memory import DmaError, DmaMemory

__all__ = ["Extent", "JobBus", "JobStop", "OutputFifo"]

#: A piece of memory: (address, length).
Extent = tuple[int, int]

#: DECO error 0x1C, the watchdog: what a DECO stalled on a FIFO STORE that never fills reports.
DECO_WATCHDOG = status.DECO_WATCHDOG


class JobStop(Exception):
    """The job ends here with ``status`` (an error, or 0 for a HALT)."""

    def __init__(self, word: int) -> None:
        super().__init__(f"job stopped with status 0x{word:08x}")
        self.status = word


class JobBus:
    """DmaMemory as one job sees it: every write is recorded, bad addresses stop the job.

    ``read``/``write``/``valid``/``alloc`` have DmaMemory's signatures (protocols use them and see
    DmaError); ``fetch``/``put`` raise JobStop with DECO DMA 0x16 at a command's index instead.
    """

    def __init__(self, memory: DmaMemory) -> None:
        self.memory = memory
        self.writes: list[tuple[int, int]] = []

    def read(self, addr: int, n: int) -> bytes:
        return self.memory.read(addr, n)

    def write(self, addr: int, data: bytes) -> None:
        data = bytes(data)
        self.memory.write(addr, data)
        if not data:
            return
        if self.writes and sum(self.writes[-1]) == addr:  # one buffer filled piece by piece
            start, length = self.writes.pop()
            self.writes.append((start, length + len(data)))
        elif (addr, len(data)) not in self.writes:
            self.writes.append((addr, len(data)))

    def valid(self, addr: int, n: int) -> bool:
        return self.memory.valid(addr, n)

    def alloc(self, size: int, align: int = 16) -> int:
        return self.memory.alloc(size, align)

    def fetch(self, addr: int, n: int, index: int) -> bytes:
        """``n`` bytes at ``addr`` for the command at ``index``; nothing is read for 0 bytes."""
        if n == 0:
            return b""
        try:
            return self.memory.read(addr, n)
        except DmaError:
            raise JobStop(status.deco(status.DECO_DMA, index)) from None

    def writable(self, addr: int, n: int, index: int) -> int:
        """``addr`` when ``n`` bytes there can be written, checked before the data is made (an
        EXT length can ask for 4 GiB); JobStop with DECO DMA 0x16 when not."""
        if n and not self.memory.valid(addr, n):
            raise JobStop(status.deco(status.DECO_DMA, index))
        return addr

    def put(self, addr: int, data: bytes, index: int) -> None:
        """Write ``data`` at ``addr`` for the command at ``index``."""
        if not data:
            return
        try:
            self.write(addr, data)
        except DmaError:
            raise JobStop(status.deco(status.DECO_DMA, index)) from None

    def gather(self, extents: Sequence[Extent], index: int) -> bytes:
        """The bytes of ``extents`` one after the other."""
        for addr, n in extents:
            self.writable(addr, n, index)  # every piece readable before any is copied
        return b"".join(self.fetch(addr, n, index) for addr, n in extents)

    def scatter(self, extents: Sequence[Extent], data: bytes, index: int) -> None:
        """Write ``data`` over ``extents`` in order (their lengths add up to len(data))."""
        self.check(extents, index)
        pos = 0
        for addr, n in extents:
            self.put(addr, data[pos : pos + n], index)
            pos += n

    def check(self, extents: Sequence[Extent], index: int) -> None:
        """JobStop with DECO DMA 0x16 unless every extent can be written."""
        for addr, n in extents:
            self.writable(addr, n, index)


@dataclass
class _Store:
    extents: deque[list[int]] = field(default_factory=deque)  # [address, length] still to fill
    index: int = 0


class OutputFifo:
    """Class-1 output waiting for FIFO STOREs, and FIFO STOREs waiting for output.

    Stores are filled in the order they were issued, whichever of data and store came first
    (GCM descriptors issue the FIFO STORE before the FIFO LOAD that feeds it). Where each store
    writes is fixed when it is issued (its extents of the output sequence).
    """

    def __init__(self, bus: JobBus) -> None:
        self._bus = bus
        self._data = bytearray()
        self._stores: deque[_Store] = deque()

    def push(self, data: bytes) -> None:
        """Output from a CHA (or a LOAD or MOVE into the output FIFO)."""
        if data:
            self._data += data
            self._drain()

    def expect(self, extents: Sequence[Extent], index: int) -> None:
        """A FIFO STORE over ``extents``, filled as output arrives."""
        pieces = deque([a, n] for a, n in extents if n)
        if pieces:
            self._stores.append(_Store(pieces, index))
            self._drain()

    def take(self, n: int) -> bytes | None:
        """``n`` bytes of output no store has claimed (a MOVE from the output FIFO), or None
        when fewer are waiting."""
        if len(self._data) < n:
            return None
        chunk = bytes(self._data[:n])
        del self._data[:n]
        return chunk

    def _drain(self) -> None:
        while self._stores and self._data:
            store = self._stores[0]
            piece = store.extents[0]
            n = min(piece[1], len(self._data))
            chunk = bytes(self._data[:n])
            del self._data[:n]
            self._bus.put(piece[0], chunk, store.index)
            piece[0] += n
            piece[1] -= n
            if not piece[1]:
                store.extents.popleft()
                if not store.extents:
                    self._stores.popleft()

    def clear(self) -> None:
        """Clear-Written "reset output FIFO": pending output is dropped."""
        self._data.clear()

    def check_drained(self) -> None:
        """At the end of the descriptor: a store still waiting stalls the DECO (watchdog)."""
        if self._stores:
            raise JobStop(status.deco(DECO_WATCHDOG, self._stores[0].index))
