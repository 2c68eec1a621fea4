"""Thread-safe offload counters: per engine and algorithm, ops, bytes, declines by reason, faults
(and, in a provider that cross-checks engine results, the results checked and the mismatches).

The hot path is one ``SizeLog.append`` of the op's size (atomic, no lock: see
:mod:`cryptoffload.directpath`); appended sizes are folded into totals under the cell's lock
every few thousand ops and whenever a snapshot is read, so memory stays bounded and no count is
ever lost.
"""

from __future__ import annotations

import _thread  # its allocate_lock is threading.Lock, without threading's import
from typing import Any

from cryptoffload.core.directpath import FOLD_AT as _FOLD_AT
from cryptoffload.core.directpath import SizeLog

Snapshot = dict[str, dict[str, dict[str, Any]]]

#: Pending sizes a cell holds before the thread that adds one folds them into the totals
#: (defined with the direct path, which checks it too).
FOLD_AT = _FOLD_AT


class Cell:
    """The counts of one engine and algorithm."""

    __slots__ = (
        "adaptive",
        "bytes",
        "checked",
        "declined",
        "faults",
        "held",
        "lock",
        "mismatches",
        "on_held_log",
        "on_marked_log",
        "ops",
        "pending",
        "zeroed",
    )

    def __init__(self) -> None:
        self.pending = SizeLog()
        self.ops = 0
        self.bytes = 0
        self.faults = 0
        self.checked = 0
        self.mismatches = 0
        self.declined: dict[str, int] = {}
        self.lock = _thread.allocate_lock()
        self.zeroed = False  # counted something once, then reset: still shown, with zeros
        #: For a software cell whose algorithm engines claim: called (lock held) with
        #: :attr:`pending`, where ops the policy kept from every engine are recorded as ``~size``
        #: (see :meth:`cryptoffload.lane.Lane.holds_back`); drains it, counts the engines'
        #: declines of the marked ones, and returns (ops, bytes).
        self.on_marked_log: Any = None
        #: As ``on_marked_log``, for :attr:`held`, whose every size is such an op.
        self.on_held_log: Any = None
        #: Sizes of ops the policy kept from every engine, which the primitive ran in software
        #: directly (a software cell whose algorithm engines claim).
        self.held = SizeLog()
        #: For an engine cell of an algorithm routed adaptively: gives the ``adaptive`` entry.
        self.adaptive: Any = None

    def used(self) -> bool:
        """Whether the cell has anything to show (a cell made ahead of use shows nothing)."""
        return bool(
            self.pending
            or self.held
            or self.ops
            or self.faults
            or self.declined
            or self.zeroed
            or self.checked
        )

    def add(self, nbytes: int) -> None:
        """One completed operation of ``nbytes``."""
        pending = self.pending
        pending.append(nbytes)
        if len(pending) > FOLD_AT:
            self.fold()

    def decline(self, reason: str) -> None:
        """The engine (or the policy on its behalf) did not take an operation, for ``reason``."""
        with self.lock:
            self.declined[reason] = self.declined.get(reason, 0) + 1

    def fault(self) -> None:
        """The engine failed on an operation; another engine finished it."""
        with self.lock:
            self.faults += 1

    def crosschecked(self, mismatch: bool) -> None:
        """One engine result recomputed in software: it agreed, or (``mismatch``) it did not."""
        with self.lock:
            self.checked += 1
            self.mismatches += mismatch

    def fold(self) -> None:
        """Move pending sizes into the totals (a drain of exactly what is there now)."""
        with self.lock:
            if self.held:
                if self.on_held_log is not None:  # the lane drains it, counting the declines
                    n, total = self.on_held_log(self.held)
                else:
                    n, total = self.held.drain_total()
                self.bytes += total
                self.ops += n
            pending = self.pending
            if not pending:
                return
            if self.on_marked_log is not None:  # the lane drains it, counting the declines
                n, total = self.on_marked_log(pending)
            else:
                n, total = pending.drain_total()
            self.bytes += total
            self.ops += n

    def as_dict(self, checks: bool = False) -> dict[str, Any]:
        """The counts as plain data; with ``checks``, the cross-check's two counts too."""
        self.fold()
        with self.lock:
            out = {
                "ops": self.ops,
                "bytes": self.bytes,
                "declined": dict(self.declined),
                "faults": self.faults,
            }
            if checks or self.checked:
                out["checked"] = self.checked
                out["mismatches"] = self.mismatches
        if self.adaptive is not None:
            out["adaptive"] = self.adaptive()
        return out


class Counters:
    """Counts what every engine did. Shape of a snapshot::

    {engine: {algorithm: {"ops": int, "bytes": int, "declined": {reason: int}, "faults": int}}}

    With ``checks`` (a provider that cross-checks engine results), every cell also has
    ``"checked"``: engine results recomputed in software, and ``"mismatches"``: those that
    disagreed (each is also a fault, and disables the engine for that algorithm). Counters
    without it keep the four keys, so that readers of either shape can use ``.get``.

    With adaptive routing on (``Policy(adaptive=True)``), the cell of the first engine on an
    algorithm's route also has ``"adaptive"``: ``{"samples", "moves", "threshold", "classes"}``
    (see :meth:`cryptoffload.adaptive.Adaptive.as_dict`); :func:`diff` leaves it out.
    """

    __slots__ = ("_cells", "_engines", "_lock", "checks")

    def __init__(self, engines: tuple[str, ...] = (), checks: bool = False) -> None:
        self._engines = tuple(engines)
        #: Whether cells report the cross-check's counts (``checked``, ``mismatches``).
        self.checks = checks
        self._cells: dict[tuple[str, str], Cell] = {}
        self._lock = _thread.allocate_lock()

    def cell(self, engine: str, alg: str) -> Cell:
        """The cell of ``engine`` and ``alg`` (created on first use); primitives may keep it."""
        key = (engine, alg)
        cell = self._cells.get(key)
        if cell is None:
            with self._lock:
                cell = self._cells.get(key)
                if cell is None:
                    cell = self._cells[key] = Cell()
        return cell

    def count(self, engine: str, alg: str, nbytes: int) -> None:
        """One operation of ``nbytes`` completed by ``engine``."""
        self.cell(engine, alg).add(nbytes)

    def decline(self, engine: str, alg: str, reason: str) -> None:
        """``engine`` (or the policy on its behalf) did not take an operation, for ``reason``."""
        self.cell(engine, alg).decline(reason)

    def fault(self, engine: str, alg: str) -> None:
        """``engine`` failed on an operation; another engine finished it."""
        self.cell(engine, alg).fault()

    def snapshot(self) -> Snapshot:
        """Every count, as plain dicts (JSON-ready); registered engines always appear, an
        algorithm once something was counted for it."""
        out: Snapshot = {engine: {} for engine in self._engines}
        with self._lock:
            cells = list(self._cells.items())
        for _, cell in cells:  # first: software's held-back ops add declines to engine cells
            cell.fold()
        for (engine, alg), cell in cells:
            if cell.used():
                out.setdefault(engine, {})[alg] = cell.as_dict(self.checks)
        return out

    def reset(self) -> None:
        """Zero every count (ops completing during the reset may be counted before or after)."""
        with self._lock:
            cells = list(self._cells.values())
        for cell in cells:  # all first: a software cell's fold adds to engines' cells
            cell.fold()
        for cell in cells:
            with cell.lock:
                cell.zeroed = cell.zeroed or cell.used()
                cell.ops = cell.bytes = cell.faults = cell.checked = cell.mismatches = 0
                cell.declined.clear()

    @staticmethod
    def diff(before: Snapshot, after: Snapshot) -> Snapshot:
        """What happened between two snapshots (see :func:`diff`)."""
        return diff(before, after)

    def to_json(self, **kwargs: Any) -> str:
        """The snapshot as JSON text."""
        import json  # here: its import (regexes compiled) is a program's start-up cost

        return json.dumps(self.snapshot(), sort_keys=True, **kwargs)

    def to_prometheus(self) -> str:
        """The snapshot in the Prometheus text exposition format."""
        return prometheus_text(self.snapshot())


def diff(before: Snapshot, after: Snapshot) -> Snapshot:
    """What happened between two snapshots; entries that did not change are left out."""
    out: Snapshot = {}
    for engine, algs in after.items():
        old_algs = before.get(engine, {})
        changed: dict[str, dict[str, Any]] = {}
        for alg, cell in algs.items():
            old = old_algs.get(alg, {"ops": 0, "bytes": 0, "declined": {}, "faults": 0})
            declined = {
                reason: n - old["declined"].get(reason, 0)
                for reason, n in cell["declined"].items()
                if n != old["declined"].get(reason, 0)
            }
            entry = {
                "ops": cell["ops"] - old["ops"],
                "bytes": cell["bytes"] - old["bytes"],
                "declined": declined,
                "faults": cell["faults"] - old["faults"],
            }
            for key in _CHECK_KEYS:
                if key in cell:
                    entry[key] = cell[key] - old.get(key, 0)
            if any(entry[k] for k in entry if k != "declined") or declined:
                changed[alg] = entry
        out[engine] = changed
    return out


_CHECK_KEYS = ("checked", "mismatches")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(snapshot: Snapshot) -> str:
    """Render a snapshot as Prometheus counters (ops, bytes, declines by reason, faults)."""
    metrics = {
        "ops": ("cryptoffload_ops_total", "Operations completed, by engine and algorithm."),
        "bytes": ("cryptoffload_bytes_total", "Payload bytes of completed operations."),
        "declined": (
            "cryptoffload_declined_total",
            "Operations an engine did not take, by reason.",
        ),
        "faults": ("cryptoffload_faults_total", "Engine failures that software recovered from."),
        "checked": (
            "cryptoffload_checked_total",
            "Engine results recomputed in software by the sampled cross-check.",
        ),
        "mismatches": (
            "cryptoffload_mismatches_total",
            "Engine results that software's recomputation contradicted.",
        ),
    }
    lines: list[str] = []
    for key, (metric, help_text) in metrics.items():
        cells = [(e, a) for e in sorted(snapshot) for a in sorted(snapshot[e])]
        if key in _CHECK_KEYS and not any(key in snapshot[e][a] for e, a in cells):
            continue  # counters that do not cross-check keep the four metrics
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter"]
        for engine, alg in cells:
            if key in snapshot[engine][alg]:
                labels = f'engine="{_label(engine)}",algorithm="{_label(alg)}"'
                value = snapshot[engine][alg][key]
                if key == "declined":
                    for reason in sorted(value):
                        lines.append(
                            f'{metric}{{{labels},reason="{_label(reason)}"}} {value[reason]}'
                        )
                else:
                    lines.append(f"{metric}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"
