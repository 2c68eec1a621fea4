"""How the CAAM driver reaches a block: the Transport protocol, and ModelTransport (the model)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from cryptoffload.caam.model.core import CaamModel

__all__ = ["ModelTransport", "Transport"]


@runtime_checkable
class Transport(Protocol):
    """A CAAM block's 32-bit registers and the DMA memory it reads and writes."""

    name: str
    """Where the block is: "model:t2080", "devmem:0xffe300000+pool:0x7f000000", ..."""
    svr: int | None
    """The SoC version register (E bit: SEC present, ``regs.sec_present``); None: unknown."""
    bounce_bytes: int
    """Bytes copied into and out of DMA memory through write/read/read_into (0 on the model)."""

    def read32(self, offset: int) -> int:
        """The 32-bit register at ``offset`` from the block base."""
        ...

    def write32(self, offset: int, value: int) -> None:
        """Write the 32-bit register at ``offset`` from the block base."""
        ...

    def alloc(self, size: int, align: int = 64) -> int:
        """The physical (bus) address of ``size`` bytes of new DMA memory (contents undefined)."""
        ...

    def free(self, phys: int) -> None:
        """Give back DMA memory ``alloc`` returned; any later access to it is an error."""
        ...

    def write(self, phys: int, data: bytes | bytearray | memoryview) -> None:
        """Copy ``data`` into DMA memory at ``phys`` (inside one allocated region)."""
        ...

    def read(self, phys: int, n: int) -> bytes:
        """``n`` bytes of DMA memory at ``phys`` (inside one allocated region)."""
        ...

    def read_into(self, phys: int, out: bytearray | memoryview) -> None:
        """Fill ``out`` with the DMA memory at ``phys`` (inside one allocated region)."""
        ...

    def view(self, phys: int, n: int) -> memoryview:
        """A writable byte view of ``n`` bytes of DMA memory at ``phys`` (inside one allocated
        region): the memory the block reads and writes, not a copy (``cryptoffload.DmaBuffer``
        is made from it). Writes through it are not counted in ``bounce_bytes``. Optional: a
        transport without it gives no DMA buffers to callers."""
        ...

    def close(self) -> None:
        """Release the registers and the memory; the transport is unusable afterwards."""
        ...


class ModelTransport:
    """The CAAM model as a transport: its registers, and its DMA memory with no bounce copies.

    The methods are the model's own (bound in ``__init__``: no extra call per register access).
    The model's memory zeroes new regions, aligns them to 64 bytes or more and faults (DmaError)
    on any access outside a live region (a freed one stays unused for the next 64 frees, so a
    stale access faults too); a part without the SEC raises SecAbsent on any register access,
    so check ``svr`` first.
    """

    def __init__(self, model: CaamModel) -> None:
        self.model = model
        self.name = f"model:{model.part.name}"
        self.svr: int | None = model.svr
        self.bounce_bytes = 0
        memory = model.memory
        self.read32 = model.read32
        self.write32 = model.write32
        self.alloc = memory.alloc  # 64-byte aligned whatever the alignment asked below that
        self.free = memory.free
        self.write = memory.write
        self.read = memory.read
        self.read_into = memory.read_into
        self.view = memory.view

    @classmethod
    def for_part(cls, part: str, seed: bytes | None = None) -> ModelTransport:
        """A transport over a new model of ``part`` ("t2080", "t1040", "t2080-nosec", "imx7d")."""
        from cryptoffload.caam.model.core import CaamModel

        return cls(CaamModel(part, seed=seed))

    def __repr__(self) -> str:
        return f"ModelTransport({self.name!r})"

    def __enter__(self) -> ModelTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release: the model lives as long as it is referenced."""
