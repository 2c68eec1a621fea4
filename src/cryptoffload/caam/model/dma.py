"""A job's DMA: memory reads and writes with DECO DMA errors, and the output FIFO's stores."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from cryptoffload.caam import status
from cryptoffload.caam.model.memory import DmaError, DmaMemory

__all__ = ["JobBus", "JobStop", "OutputFifo"]

#: DECO error 0x1C, the watchdog: what a DECO stalled on a FIFO STORE that never fills reports.
DECO_WATCHDOG = 0x1C


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


@dataclass
class _Store:
    addr: int | None  # None: SKIP, the bytes are dropped
    remaining: int
    index: int
    done: int = 0


class OutputFifo:
    """Class-1 output waiting for FIFO STOREs, and FIFO STOREs waiting for output.

    Stores are filled in the order they were issued, whichever of data and store came first
    (GCM descriptors issue the FIFO STORE before the FIFO LOAD that feeds it).
    """

    def __init__(self, bus: JobBus) -> None:
        self._bus = bus
        self._data = bytearray()
        self._stores: deque[_Store] = deque()

    def push(self, data: bytes) -> None:
        """Output from a CHA."""
        if data:
            self._data += data
            self._drain()

    def expect(self, addr: int | None, length: int, index: int) -> None:
        """A FIFO STORE of ``length`` bytes to ``addr`` (None: skip them)."""
        if length:
            self._stores.append(_Store(addr, length, index))
            self._drain()

    def _drain(self) -> None:
        while self._stores and self._data:
            store = self._stores[0]
            n = min(store.remaining, len(self._data))
            chunk = bytes(self._data[:n])
            del self._data[:n]
            if store.addr is not None:
                self._bus.put(store.addr + store.done, chunk, store.index)
            store.done += n
            store.remaining -= n
            if not store.remaining:
                self._stores.popleft()

    def clear(self) -> None:
        """Clear-Written "reset output FIFO": pending output is dropped."""
        self._data.clear()

    def check_drained(self) -> None:
        """At the end of the descriptor: a store still waiting stalls the DECO (watchdog)."""
        if self._stores:
            raise JobStop(status.deco(DECO_WATCHDOG, self._stores[0].index))
