"""Timing loops: batches under time.perf_counter, the harness's own cost, trial statistics."""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: A trial whose batches would each take less than this is run in larger batches.
_MIN_BATCH_SECONDS = 0.002

#: (max - min) / median of the trials above which a row is flagged as noisy.
NOISY_SPREAD = 0.10


@dataclass
class Trial:
    """One timed run of a callable: operations done, wall and CPU seconds spent."""

    ops: int
    wall: float
    user: float
    sys: float


@dataclass
class Measurement:
    """The trials of one row and what they add up to."""

    trials: list[Trial] = field(default_factory=list)

    def rates(self, scale: float) -> list[float]:
        """Per-trial rate: ops/s times ``scale`` (bytes per op / MiB for bulk rows, 1 otherwise)."""
        return [t.ops / t.wall * scale for t in self.trials if t.wall > 0]

    @property
    def ops(self) -> int:
        return sum(t.ops for t in self.trials)

    @property
    def wall(self) -> float:
        return sum(t.wall for t in self.trials)

    @property
    def user(self) -> float:
        return sum(t.user for t in self.trials)

    @property
    def sys(self) -> float:
        return sum(t.sys for t in self.trials)


def _cpu() -> tuple[float, float]:
    t = os.times()
    return t.user, t.system


def run_for(fn: Callable[[], object], seconds: float) -> Trial:
    """Call ``fn`` repeatedly for about ``seconds``, in batches timed with perf_counter."""
    fn()  # warm: first-call costs (key schedules, socket set-up) are not the steady state
    user0, sys0 = _cpu()
    start = time.perf_counter()
    deadline = start + seconds
    batch, ops = 1, 0
    repeat = itertools.repeat
    while True:
        batch_start = time.perf_counter()
        for _ in repeat(None, batch):
            fn()
        now = time.perf_counter()
        ops += batch
        if now >= deadline:
            break
        if now - batch_start < _MIN_BATCH_SECONDS:
            batch *= 2
    user1, sys1 = _cpu()
    return Trial(ops=ops, wall=now - start, user=user1 - user0, sys=sys1 - sys0)


def measure(fn: Callable[[], object], seconds: float, trials: int) -> Measurement:
    """``trials`` runs of ``seconds`` each."""
    return Measurement([run_for(fn, seconds) for _ in range(trials)])


def harness_seconds_per_call(seconds: float = 0.05) -> float:
    """What the loop itself costs per call, timed with a function that does nothing."""

    def nothing() -> None:
        return None

    trial = run_for(nothing, seconds)
    return trial.wall / trial.ops


def summarize(values: list[float]) -> tuple[float, float, bool]:
    """(median, spread, noisy) of per-trial rates; spread is (max - min) / median."""
    if not values:
        return 0.0, 0.0, False
    median = statistics.median(values)
    spread = (max(values) - min(values)) / median if median else 0.0
    return median, spread, spread > NOISY_SPREAD
