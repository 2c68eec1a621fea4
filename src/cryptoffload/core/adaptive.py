"""Adaptive routing: per algorithm, a threshold moved at run time by the measured cost per path.

One :class:`Adaptive` per lane (algorithm) when the policy turns it on. Sizes fall in classes by
their bit length (0, 1, 2-3, 4-7, ... bytes: powers of two). A share of ops (``sample``: a
countdown over random gaps of mean 1/sample ops) is due to be measured: alternately one goes
down the other path (a sample) and one down its own, timed (ns per op) into an EWMA for that
path and class; other ops are not timed. When both paths of a class have ``min_samples`` fresh
times and the other path is faster by more than ``margin``, the threshold moves across the
class: down to the class's first size when the engine wins a class below it, up past the class
when software wins a class at or above it. The engines then take sizes from the threshold up
(their ``max_size``, ``deny``, ``require`` and a cross-check's ``disabled`` still hold).
At the start and after each move, ``explore`` due ops come back to back (a burst), so classes
settle within their first few ops instead of a few hundred on the path they started on.

A class whose evidence is clear the other way (its own path faster by more than ``margin``)
is settled: it skips its next 3, 15, 63 ... up to :data:`MAX_SKIP` due ops (four times more
each time it is confirmed, and at once as many as keep the samples' cost near
:data:`SAMPLE_COST` of the class's time; back to every one when the evidence is unclear or the
threshold moves), so a path many times slower costs that class about 1%, not the sampled share.
"""

from __future__ import annotations

import _thread  # its allocate_lock is threading.Lock, without threading's import
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

#: Size classes: bit lengths 0..64.
CLASSES = 65
#: A time above this many times a path's running cost counts as this many times it.
OUTLIER = 4
#: The share of a settled class's time its samples on the slower path may cost (1%).
SAMPLE_COST = 0.01
#: Most due samples a settled class skips between two it takes.
MAX_SKIP = 255
ENGINE, SOFTWARE = 0, 1


class _Settings(NamedTuple):
    """The fields of :class:`AdaptiveSettings` and their defaults."""

    #: Share of ops sent down the other path to measure it (default 1/64).
    sample: float = 1 / 64
    #: How much faster (a fraction) the other path must be to move the threshold. At most
    #: 0.05, or a class could stay on a path more than 5% slower than the other (the goal:
    #: never below 0.95 of the better path).
    margin: float = 0.05
    #: Fresh samples needed on both paths of a class before it can move the threshold.
    min_samples: int = 8
    #: Weight of a new time in the running average (EWMA).
    alpha: float = 0.125
    #: Due ops taken back to back (every op due) at the start and after each move, so a
    #: class settles within ``2 * min_samples`` of its ops, not ``2 * min_samples / sample``
    #: ops spent on the path it starts on (0: none).
    explore: int = 128


class AdaptiveSettings(_Settings):
    """How adaptive routing samples and decides (the policy's ``[adaptive]`` table): an
    immutable record, checked when made (a named tuple, not a dataclass: see
    :class:`~cryptoffload.engines.base.Capabilities`)."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> AdaptiveSettings:
        self = super().__new__(cls, *args, **kwargs)
        self._check()
        return self

    def _check(self) -> None:
        for name in ("sample", "margin", "alpha"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"adaptive {name} must be a number, got {value!r}")
        if not 0 < self.sample <= 0.5:
            raise ValueError(f"adaptive sample must be in (0, 0.5], got {self.sample}")
        if not 0 <= self.margin < 1:
            raise ValueError(f"adaptive margin must be in [0, 1), got {self.margin}")
        if not 0 < self.alpha <= 1:
            raise ValueError(f"adaptive alpha must be in (0, 1], got {self.alpha}")
        if isinstance(self.min_samples, bool) or not isinstance(self.min_samples, int):
            raise TypeError(f"adaptive min_samples must be an integer, got {self.min_samples!r}")
        if self.min_samples < 1:
            raise ValueError(f"adaptive min_samples must be at least 1, got {self.min_samples}")
        if isinstance(self.explore, bool) or not isinstance(self.explore, int):
            raise TypeError(f"adaptive explore must be an integer, got {self.explore!r}")
        if self.explore < 0:
            raise ValueError(f"adaptive explore must be 0 or more, got {self.explore}")

    @classmethod
    def parse(cls, value: Any) -> AdaptiveSettings | None:
        """None (off) for False/None; defaults for True; a table: ``enabled`` plus settings."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, AdaptiveSettings):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"adaptive must be true, false or a table, got {value!r}")
        known = {"enabled", "sample", "margin", "min_samples", "alpha", "explore"}
        unknown = set(value) - known
        if unknown:
            raise ValueError(
                f"adaptive: unknown key(s) {sorted(unknown)}; expected some of {sorted(known)}"
            )
        enabled = value.get("enabled", True)
        if not isinstance(enabled, bool):
            raise TypeError(f"adaptive enabled must be true or false, got {enabled!r}")
        if not enabled:
            return None
        return cls(**{k: v for k, v in value.items() if k != "enabled"})

    def to_dict(self) -> dict[str, Any]:
        """The ``[adaptive]`` table as written to TOML."""
        return {
            "enabled": True,
            "sample": self.sample,
            "margin": self.margin,
            "min_samples": self.min_samples,
            "alpha": self.alpha,
            "explore": self.explore,
        }


def gaps(interval: int, seed: int | None = None) -> Callable[[], int]:
    """The default sampler's gaps: ops from one due op to the next, drawn uniformly from
    1 .. 2 * interval - 1 (mean ``interval``; random, so a workload's period cannot hide a
    size from the samples). One draw per due op, not one per op."""
    import random  # here: adaptive routing is off unless a policy turns it on

    draw = random.Random(seed).randint
    top = 2 * interval - 1

    def gap() -> int:
        return draw(1, top)

    return gap


def size_class(size: int) -> int:
    """The class of a size: its bit length (class c holds 2**(c-1) .. 2**c - 1 bytes)."""
    return size.bit_length()


class Adaptive:
    """One algorithm's adaptive state: running costs per path and class, and the threshold.

    ``clock()`` gives nanoseconds (``time.perf_counter_ns``). Which ops are due: with no
    ``sampler``, a countdown (``countdown``, one decrement an op on the lane's path; at zero
    :meth:`due_now` draws the next gap from :func:`gaps`); an injected ``sampler()`` (tests)
    is asked every op instead. ``on_move(threshold)`` is called (lock not held) when the
    threshold moves.
    """

    #: The paths' indices (``record``'s second argument), for callers that do not import
    #: this module until adaptive routing is on.
    ENGINE, SOFTWARE = ENGINE, SOFTWARE

    def __init__(
        self,
        settings: AdaptiveSettings,
        threshold: int,
        on_move: Callable[[int], None],
        clock: Callable[[], int] | None = None,
        sampler: Callable[[], bool] | None = None,
    ) -> None:
        self.settings = settings
        self.threshold = threshold
        self.clock = clock or time.perf_counter_ns
        self.interval = max(1, round(1 / settings.sample))
        #: None: the countdown decides (see the class); else asked once an op.
        self.sampler = sampler
        self._gap = gaps(self.interval)
        #: Due ops left to take back to back (``explore``; again after each move).
        self.burst = settings.explore
        self.countdown = 1 if self.burst else self._gap()
        self._on_move = on_move
        self._lock = _thread.allocate_lock()
        self.cost: list[list[float]] = [[0.0] * CLASSES, [0.0] * CLASSES]
        self.fresh: list[list[int]] = [[0] * CLASSES, [0] * CLASSES]
        self.skip = [0] * CLASSES
        self._skipped = [0] * CLASSES
        self.samples = 0
        self.moves = 0
        self._flip = False

    def due_now(self) -> bool:
        """The countdown reached zero: this op is due; the next gap starts (always True)."""
        self.countdown = self.step() if self.burst > 0 else self._gap()
        return True

    def step(self) -> int:
        """Ops from this due op to the next on the direct path (which counts its ops): 1 while
        an exploring burst lasts (one of it used), else ``interval``."""
        if self.burst > 0:
            self.burst -= 1
            return 1
        return self.interval

    def take(self, size: int) -> bool:
        """Whether a due sample of ``size`` is taken (False: its class is settled and skips
        it; the op takes its ordinary path)."""
        c = size.bit_length()
        if self._skipped[c] < self.skip[c]:
            self._skipped[c] += 1
            return False
        self._skipped[c] = 0
        return True

    def flip(self) -> bool:
        """Alternately True and False: a due op measures the other path one time (a sample),
        its own the next (ops that are not due are not timed)."""
        self._flip = not self._flip
        return self._flip

    def record(self, size: int, path: int, ns: int, sample: bool) -> None:
        """One op of ``size`` took ``ns`` on ``path`` (ENGINE or SOFTWARE); maybe move."""
        c = size.bit_length()
        s = self.settings
        moved = None
        with self._lock:
            if sample:
                self.samples += 1
            costs = self.cost[path]
            fresh = self.fresh[path]
            old = costs[c]
            # A time more than OUTLIER x the running cost (the thread preempted on a busy
            # machine, a page fault) counts as OUTLIER x; fresh evidence keeps the average.
            costs[c] = ns if not old else old + s.alpha * (min(ns, OUTLIER * old) - old)
            fresh[c] += 1
            if self.fresh[ENGINE][c] >= s.min_samples and self.fresh[SOFTWARE][c] >= s.min_samples:
                moved = self._decide(c)
        if moved is not None:
            self._on_move(moved)

    def _decide(self, c: int) -> int | None:
        """The new threshold if class ``c``'s evidence is clear, else None (lock held)."""
        engine, software = self.cost[ENGINE][c], self.cost[SOFTWARE][c]
        keep = 1 - self.settings.margin
        low = 0 if c == 0 else 1 << (c - 1)
        offloaded = low >= self.threshold
        if not offloaded and engine < software * keep:
            new = low
        elif offloaded and software < engine * keep:
            new = 1 << c
        else:
            taken, other = (engine, software) if offloaded else (software, engine)
            if taken < other * keep:  # settled: sample it less, from fresh evidence
                # Enough skips that the samples cost the class about SAMPLE_COST of its time:
                # one due op in two, one in ``interval`` ops, is a sample on the slower path.
                slower = other / taken - 1
                enough = math.ceil(slower / (2 * self.interval * SAMPLE_COST)) - 1
                self.skip[c] = min(max(4 * self.skip[c] + 3, enough), MAX_SKIP)
                self.fresh[ENGINE][c] = self.fresh[SOFTWARE][c] = 0
            else:
                self.skip[c] = 0
            return None
        self.threshold = new
        self.moves += 1
        self.burst = self.settings.explore  # explore again: other classes may move too
        self.countdown = 1
        self.skip[c] = 0
        self.fresh[ENGINE][c] = self.fresh[SOFTWARE][c] = 0
        return new

    def as_dict(self) -> dict[str, Any]:
        """The counters' ``adaptive`` entry: samples taken, moves made, the threshold now, and
        the running cost (ns per op) per path for each class measured on both."""
        with self._lock:
            classes = {
                f"{0 if c == 0 else 1 << (c - 1)}": {
                    "engine_ns": round(self.cost[ENGINE][c]),
                    "software_ns": round(self.cost[SOFTWARE][c]),
                }
                for c in range(CLASSES)
                if self.cost[ENGINE][c] and self.cost[SOFTWARE][c]
            }
            return {
                "samples": self.samples,
                "moves": self.moves,
                "threshold": self.threshold,
                "classes": classes,
            }
