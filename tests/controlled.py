"""Engines whose cost is controlled: a fixed delay per job plus a cost per payload byte.

Each job is answered by software, then the engine waits (busy, on ``time.perf_counter``) until
``delay + per_byte * size`` seconds have passed since it started: a job never takes less, so
between two such engines the one with the larger cost at a size is the slower one there, which
is all that the calibration tests rely on. ``wrong_at`` makes the n-th answer wrong in one byte.
"""

from __future__ import annotations

import time
from typing import Any

from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine

_SOFTWARE = SoftwareEngine()


class ControlledEngine:
    """Takes every op of ``algorithms``, each costing ``delay`` + ``per_byte`` x size seconds."""

    def __init__(
        self,
        name: str,
        algorithms: Any,
        delay: float = 0.0,
        per_byte: float = 0.0,
        wrong_at: int | None = None,
    ) -> None:
        self.name = name
        self.algorithms = frozenset(algorithms)
        self.delay = delay
        self.per_byte = per_byte
        self.wrong_at = wrong_at
        self.jobs = 0

    def probe(self) -> Capabilities:
        return Capabilities(
            True,
            algorithms=self.algorithms,
            detail={
                "algorithms": {
                    a: {"driver": "controlled", "hardware": True} for a in self.algorithms
                }
            },
        )

    def run(self, op: Any) -> Any:
        start = time.perf_counter()
        self.jobs += 1
        result = _SOFTWARE.run(op)
        if self.jobs == self.wrong_at:
            result = _spoil(op, result)
        deadline = start + self.delay + self.per_byte * op.size
        while time.perf_counter() < deadline:
            pass
        return result

    @property
    def figures(self) -> dict[str, int]:
        return {"jobs": self.jobs}


def _spoil(op: Any, result: Any) -> Any:
    """The result with one byte changed (its first), wherever it is."""
    if isinstance(result, int) and op.family == "cipher" and op.out is not None:
        view = memoryview(op.out).cast("B")
        view[0] ^= 1
        return result
    return bytes([result[0] ^ 1]) + bytes(result[1:])
