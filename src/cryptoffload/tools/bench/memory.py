"""How large a buffer a benchmark row can be given on this machine: sizes are checked against
the memory available before anything is measured, so that one too large is refused up front
rather than failing its rows with MemoryError (or waking the kernel's OOM killer)."""

from __future__ import annotations

import os

#: Buffers of the block size a row holds at once: its input, its output and, for a decryption,
#: the sealed message it decrypts (measured: AES-GCM decrypt_into peaks at three).
BUFFERS_PER_ROW = 3


def available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """Memory that can be allocated now without swapping: Linux's ``MemAvailable``, else the
    free pages ``sysconf`` counts; None where neither is known."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def size_text(n: int) -> str:
    """``n`` bytes in GiB with one decimal, the scale at which memory runs out."""
    return f"{n / (1 << 30):.1f} GiB"


def too_large(size: int) -> str | None:
    """Why a row cannot hold buffers of ``size`` bytes here, or None (also when the memory
    available is not known)."""
    available = available_bytes()
    if available is None:
        return None
    largest = available // BUFFERS_PER_ROW
    if size <= largest:
        return None
    return (
        f"block size {size} bytes ({size_text(size)}) cannot be allocated here: a row holds "
        f"{BUFFERS_PER_ROW} buffers of the size and this machine has {size_text(available)} of "
        f"memory available; give at most {largest} bytes"
    )
