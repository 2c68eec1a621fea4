"""Thread-safe offload counters: per engine and algorithm, ops, bytes, declines by reason, faults.

Each thread counts into a table of its own (no lock on the hot path; one thread writes each
table); a snapshot adds the tables up. Tables of threads that have ended are folded into one.
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import Any

Snapshot = dict[str, dict[str, dict[str, Any]]]

_OPS, _BYTES, _FAULTS, _DECLINED = 0, 1, 2, 3


def _new_cell() -> list[Any]:
    return [0, 0, 0, {}]


class Counters:
    """Counts what every engine did. Shape of a snapshot::

    {engine: {algorithm: {"ops": int, "bytes": int, "declined": {reason: int}, "faults": int}}}
    """

    def __init__(self, engines: tuple[str, ...] = ()) -> None:
        self._engines = tuple(engines)
        self._local = threading.local()
        self._lock = threading.Lock()
        # (weak reference to the owning thread, table); a table maps engine -> {alg: cell}
        self._tables: list[tuple[weakref.ref[threading.Thread], dict[str, dict[str, list]]]] = []
        self._retired: dict[str, dict[str, list]] = {}

    def _table(self) -> dict[str, dict[str, list]]:
        try:
            return self._local.table
        except AttributeError:
            pass
        table: dict[str, dict[str, list]] = {}
        with self._lock:
            self._fold_dead_threads()
            self._tables.append((weakref.ref(threading.current_thread()), table))
        self._local.table = table
        return table

    def _fold_dead_threads(self) -> None:
        alive = []
        for ref, table in self._tables:
            thread = ref()
            if thread is not None and thread.is_alive():
                alive.append((ref, table))
            else:
                _merge(self._retired, table)
        self._tables = alive

    def _cell(self, engine: str, alg: str) -> list[Any]:
        table = self._table()
        algs = table.get(engine)
        if algs is None:
            algs = table[engine] = {}
        cell = algs.get(alg)
        if cell is None:
            cell = algs[alg] = _new_cell()
        return cell

    def count(self, engine: str, alg: str, nbytes: int) -> None:
        """One operation of ``nbytes`` completed by ``engine``."""
        try:
            cell = self._local.table[engine][alg]
        except (AttributeError, KeyError):
            cell = self._cell(engine, alg)
        cell[_OPS] += 1
        cell[_BYTES] += nbytes

    def software(self, alg: str, nbytes: int) -> None:
        """One operation of ``nbytes`` completed by software (the primitives' fast path)."""
        try:
            cell = self._local.software[alg]
        except (AttributeError, KeyError):
            cell = self._cell("software", alg)
            self._local.software = self._local.table["software"]
        cell[_OPS] += 1
        cell[_BYTES] += nbytes

    def decline(self, engine: str, alg: str, reason: str) -> None:
        """``engine`` (or the policy on its behalf) did not take an operation, for ``reason``."""
        declined = self._cell(engine, alg)[_DECLINED]
        declined[reason] = declined.get(reason, 0) + 1

    def fault(self, engine: str, alg: str) -> None:
        """``engine`` failed on an operation; another engine finished it."""
        self._cell(engine, alg)[_FAULTS] += 1

    def snapshot(self) -> Snapshot:
        """A consistent-enough copy of every count, as plain dicts (JSON-ready)."""
        total: dict[str, dict[str, list]] = {}
        with self._lock:
            _merge(total, self._retired)
            for _, table in self._tables:
                _merge(total, table)
        out: Snapshot = {engine: {} for engine in self._engines}
        for engine, algs in total.items():
            dest = out.setdefault(engine, {})
            for alg, cell in algs.items():
                dest[alg] = {
                    "ops": cell[_OPS],
                    "bytes": cell[_BYTES],
                    "declined": dict(cell[_DECLINED]),
                    "faults": cell[_FAULTS],
                }
        return out

    def reset(self) -> None:
        """Zero every count (counts racing with the reset in other threads may survive it)."""
        with self._lock:
            self._retired = {}
            for _, table in self._tables:
                for algs in table.values():
                    for cell in algs.values():
                        cell[_OPS] = cell[_BYTES] = cell[_FAULTS] = 0
                        cell[_DECLINED].clear()

    @staticmethod
    def diff(before: Snapshot, after: Snapshot) -> Snapshot:
        """What happened between two snapshots (see :func:`diff`)."""
        return diff(before, after)

    def to_json(self, **kwargs: Any) -> str:
        """The snapshot as JSON text."""
        return json.dumps(self.snapshot(), sort_keys=True, **kwargs)

    def to_prometheus(self) -> str:
        """The snapshot in the Prometheus text exposition format."""
        return prometheus_text(self.snapshot())


def _merge(into: dict[str, dict[str, list]], table: dict[str, dict[str, list]]) -> None:
    for engine, algs in list(table.items()):
        dest = into.setdefault(engine, {})
        for alg, cell in list(algs.items()):
            acc = dest.get(alg)
            if acc is None:
                acc = dest[alg] = _new_cell()
            acc[_OPS] += cell[_OPS]
            acc[_BYTES] += cell[_BYTES]
            acc[_FAULTS] += cell[_FAULTS]
            for reason, n in list(cell[_DECLINED].items()):
                acc[_DECLINED][reason] = acc[_DECLINED].get(reason, 0) + n


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
            if entry["ops"] or entry["bytes"] or entry["faults"] or declined:
                changed[alg] = entry
        out[engine] = changed
    return out


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
    }
    lines: list[str] = []
    for key, (metric, help_text) in metrics.items():
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter"]
        for engine in sorted(snapshot):
            for alg in sorted(snapshot[engine]):
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
