"""The model's DMA memory in the device process: the mapped pool, addressed physically, as a bus.

Any address inside the pool range can be read or written (the device does not know the
driver's allocations, as a block on a bus does not); an access outside it is a DmaError, what
the bus returns for an address no memory answers. Bytes read are counted: the device times a
job by the data it moved.
"""

from __future__ import annotations

from cryptoffload.caam.model.memory import Bytes, DmaError, as_bytes

__all__ = ["PoolMemory"]


class PoolMemory:
    """``view`` (the pool's mapping) at physical ``base``: DmaMemory's read/write/valid."""

    def __init__(self, view: memoryview, base: int) -> None:
        self.view, self.base, self.size = view, base, len(view)
        self.bytes_read = 0

    def _offset(self, addr: int, n: int) -> int:
        offset = addr - self.base
        if offset < 0 or n < 0 or offset + n > self.size:
            raise DmaError(addr, n)
        return offset

    def read(self, addr: int, n: int) -> bytes:
        offset = self._offset(addr, n)
        self.bytes_read += n
        return self.view[offset : offset + n].tobytes()

    def read_into(self, addr: int, out: bytearray | memoryview) -> None:
        view = out if type(out) is bytearray else memoryview(out).cast("B")
        offset = self._offset(addr, len(view))
        self.bytes_read += len(view)
        view[:] = self.view[offset : offset + len(view)]

    def write(self, addr: int, data: Bytes) -> None:
        data = as_bytes(data)
        offset = self._offset(addr, len(data))
        self.view[offset : offset + len(data)] = data

    def valid(self, addr: int, n: int) -> bool:
        offset = addr - self.base
        return offset >= 0 and n >= 0 and offset + n <= self.size

    def alloc(self, size: int, align: int = 16) -> int:
        """The driver owns the pool's allocations: a device never allocates."""
        raise DmaError(self.base, size)
