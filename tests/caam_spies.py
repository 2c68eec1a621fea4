"""Spies on the DMA memory of a CAAM transport: what a job left in each region it gave back."""

from __future__ import annotations

import pytest

from cryptoffload.caam.jr.transport import ModelTransport


def freed_contents(monkeypatch: pytest.MonkeyPatch, transport: ModelTransport) -> list[bytes]:
    """What every DMA region allocated from now on held when it was freed, in order (the
    transport's alloc and free wrapped for the test's duration)."""
    seen: list[bytes] = []
    sizes: dict[int, int] = {}
    alloc, free = transport.alloc, transport.free

    def spy_alloc(size: int, align: int = 64) -> int:
        phys = alloc(size, align)
        sizes[phys] = size
        return phys

    def spy_free(phys: int) -> None:
        if phys in sizes:
            seen.append(transport.read(phys, sizes.pop(phys)))
        free(phys)

    monkeypatch.setattr(transport, "alloc", spy_alloc)
    monkeypatch.setattr(transport, "free", spy_free)
    return seen
