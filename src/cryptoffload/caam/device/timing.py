"""How long the modelled block takes over a job: a fixed cost plus the bytes at its throughput.

Defaults from the articles in the project's reference set (the wolfSSL QorIQ SEC article):
"a fixed cost per job of roughly 3.5 microseconds on a 1.2 GHz T2080, covering descriptor
setup, cache maintenance and the round trip to the engine", and AES-128-GCM on the T2080's SEC
at 107.42 MiB/s (its benchmark table, 1 KB buffers). Each DECO runs one job at a time for
``latency + bytes / throughput`` seconds (bytes: what the job's DMA read, the descriptor and key
included); the part's DECOs (4 on a T2080, 1 on an i.MX7D) run side by side, so several jobs
are in flight and a short job started after a long one completes first, as on a board.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

__all__ = ["DEFAULT_LATENCY", "DEFAULT_THROUGHPUT", "DEFAULT_TIMING", "Decos", "Timing"]

DEFAULT_LATENCY = 3.5e-6
DEFAULT_THROUGHPUT = 107.42 * (1 << 20)


@dataclass(frozen=True)
class Timing:
    """Per-job fixed cost (seconds) and data rate (bytes per second); 0 latency and an infinite
    throughput make the device complete each job as soon as the model has run it."""

    latency: float = DEFAULT_LATENCY
    throughput: float = DEFAULT_THROUGHPUT

    def duration(self, nbytes: int) -> float:
        """Seconds one DECO spends on a job that moved ``nbytes``."""
        return self.latency + nbytes / self.throughput


DEFAULT_TIMING = Timing()


@dataclass
class Decos:
    """The part's DECOs: when each is free again, and the jobs they hold, soonest first."""

    count: int
    free_at: list[float] = field(default_factory=list)
    held: list[tuple[float, int, int, int, int, int]] = field(default_factory=list)
    _seq: int = 0

    def __post_init__(self) -> None:
        self.free_at = [0.0] * self.count

    def free(self, now: float) -> int | None:
        """A DECO free at ``now`` (its index), or None."""
        for i, at in enumerate(self.free_at):
            if at <= now:
                return i
        return None

    def hold(self, deco: int, done_at: float, ring: int, desc: int, word: int) -> None:
        """DECO ``deco`` holds a job until ``done_at``."""
        self.free_at[deco] = done_at
        self._seq += 1
        heapq.heappush(self.held, (done_at, self._seq, ring, desc, word, deco))

    def due(self, now: float) -> list[tuple[int, int, int]]:
        """The jobs whose time has come, (ring, desc, word), in completion order."""
        out = []
        held = self.held
        while held and held[0][0] <= now:
            _, _, ring, desc, word, _ = heapq.heappop(held)
            out.append((ring, desc, word))
        return out

    def drop_ring(self, ring: int) -> list[tuple[int, int]]:
        """Every job of ``ring`` the DECOs hold, (desc, word), taken out (a ring reset)."""
        mine = [(h[3], h[4]) for h in self.held if h[2] == ring]
        if mine:
            for h in self.held:
                if h[2] == ring:
                    self.free_at[h[5]] = 0.0
            self.held = [h for h in self.held if h[2] != ring]
            heapq.heapify(self.held)
        return mine

    def in_ring(self, ring: int) -> int:
        return sum(1 for h in self.held if h[2] == ring)

    def next_due(self) -> float | None:
        return self.held[0][0] if self.held else None
