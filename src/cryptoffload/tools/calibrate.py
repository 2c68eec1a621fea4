"""`calibrate`: where each engine pays, measured, and the policy that routes by it.

Per engine and algorithm the benchmark's case (:mod:`cryptoffload.tools.bench.cases`) runs on
the engine and on software side by side, in alternating trials, at sizes chosen by a search:
both ends of the range and the middle, then bisection (in log size) of every interval whose
ends disagree on who wins, down to one step (a factor of ``step``). Each size is decided by
:mod:`cryptoffload.tools.calibrate_stats` (the engine only when a sign test over the paired
trials says it is faster, by more than 5%, with hysteresis). The policy written gives each
engine its own ``min_size`` / ``max_size`` where it wins, ``exclude`` where it never does or
the gain is not significant, and keeps the measurements, decisions and confidence under
``calibration``.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptoffload.core.counters import diff
from cryptoffload.core.policy import Policy
from cryptoffload.core.provider import Provider
from cryptoffload.tools.bench import cases
from cryptoffload.tools.bench.cases import MIB, Case
from cryptoffload.tools.bench.timing import run_for
from cryptoffload.tools.calibrate_stats import NO_GAIN, assess
from cryptoffload.tools.calibrate_stats import verdict as verdict
from cryptoffload.tools.targets import Target, Targets
from cryptoffload.tools.verify import TAKE_ALL, select

Progress = Callable[[str], None]

#: Under this share of a point's operations the engine did not take the work at that size.
TOOK = 0.5


@dataclass(frozen=True)
class Settings:
    """The search: sizes from ``low`` to ``high`` bytes, ``step`` the finest ratio between two
    sizes measured; each point ``trials`` paired trials of ``seconds`` each (at least
    :func:`~cryptoffload.tools.calibrate_stats.fewest_pairs`, 5, for the sign test to decide;
    8 lets one pair of the 8 go the other way, a trial a busy machine spoilt, at p = 0.035)."""

    low: int = 16
    high: int = 65536
    step: float = math.sqrt(2)
    seconds: float = 0.02
    trials: int = 8


def case_for(alg: str) -> Case | None:
    """The benchmark case calibrate measures ``alg`` with (its first operation), or None."""
    return next((c for c in cases.catalog() if c.algorithm == alg), None)


def _middle(a: int, b: int) -> int:
    """The size halfway between ``a`` and ``b`` in log scale, in whole AES blocks."""
    return max(16, round(math.sqrt(a * b) / 16) * 16)


def measure_point(
    case: Case,
    engine: Provider,
    baseline: Provider,
    name: str,
    size: int,
    settings: Settings,
) -> dict[str, Any]:
    """Engine and baseline (software) throughput of ``case`` at ``size`` bytes, side by side:
    medians, their ratio, the noise band (the wider spread) and the engine's share of the ops."""
    run_engine, run_base = case.build(engine, size), case.build(baseline, size)
    scale = size / MIB if case.bulk else 1.0
    before = engine.counters.snapshot()
    rates: dict[str, list[float]] = {"engine": [], "software": []}
    for trial in range(settings.trials):
        pair = [("software", run_base), ("engine", run_engine)]
        for side, fn in pair if trial % 2 == 0 else reversed(pair):
            t = run_for(fn, settings.seconds)
            rates[side].append(t.ops / t.wall * scale if t.wall > 0 else 0.0)
    moved = diff(before, engine.counters.snapshot())
    mine = moved.get(name, {}).get(case.algorithm, {})
    total = sum(algs.get(case.algorithm, {}).get("ops", 0) for algs in moved.values())
    share = round(mine.get("ops", 0) / total, 3) if total else 0.0
    declined = None
    if share < TOOK:
        reasons = mine.get("declined", {})
        declined = ", ".join(f"{r} x{n}" for r, n in reasons.items()) or "not taken"
    point = {"size": size if case.bulk else 0}
    point.update(assess(rates["engine"], rates["software"], declined))
    point["share"] = share
    return point


def wins(point: Mapping[str, Any]) -> bool:
    """Whether the engine was chosen at this point (faster beyond the noise, and did the work)."""
    return point["decision"] == "engine"


def search(measure: Callable[[int], dict[str, Any]], settings: Settings) -> list[dict[str, Any]]:
    """Points at both ends and the middle, then the middle of every interval whose ends
    disagree (engine chosen at one, not at the other), until each such interval is one step
    wide; sorted by size."""
    low, high = settings.low, settings.high
    points = {size: measure(size) for size in sorted({low, _middle(low, high), high})}
    while True:
        todo = []
        for a, b in itertools.pairwise(sorted(points)):
            m = _middle(a, b)
            split = wins(points[a]) != wins(points[b]) and b / a > settings.step
            if split and a < m < b and m not in points:
                todo.append(m)
        if not todo:
            return [points[s] for s in sorted(points)]
        for m in todo:
            points[m] = measure(m)


def calibrate_engine(
    target: Target,
    patterns: Sequence[str] | None,
    settings: Settings,
    progress: Progress | None = None,
    baseline: Callable[[], Provider] = lambda: Provider([]),
) -> dict[str, Any]:
    """Every selected algorithm of one engine: the points measured and the verdict.

    ``baseline`` makes the provider measured as software (default: software alone)."""
    caps = target.caps
    out: dict[str, Any] = {
        "name": target.name,
        "origin": target.origin,
        "available": caps.available,
        "reason": caps.reason,
        "detail": dict(caps.detail),  # what identifies it: drivers and priorities, era, CHAs...
        "results": [],
        "skipped": {},
    }
    if not caps.available:
        return out
    engine = Provider([target.engine], policy=TAKE_ALL)
    base = baseline()
    for alg in select(caps.algorithms, patterns):
        case = case_for(alg)
        if case is None:
            out["skipped"][alg] = "no benchmark case measures it"
            continue
        if progress is not None:
            progress(f"{target.name} {alg}")

        def measure(size: int, case: Case = case) -> dict[str, Any]:
            return measure_point(case, engine, base, target.name, size, settings)

        points = search(measure, settings) if case.bulk else [measure(settings.low)]
        result = {"algorithm": alg, "operation": case.operation, "unit": case.unit}
        result.update(verdict(points, case.bulk))
        result["points"] = points
        out["results"].append(result)
    return out


def steps(targets: Targets, patterns: Sequence[str] | None) -> int:
    """How many algorithms :func:`run` will calibrate (for a progress bar)."""
    return sum(
        sum(case_for(a) is not None for a in select(t.caps.algorithms, patterns))
        for t in targets.engines
        if t.caps.available
    )


def run(
    targets: Targets,
    patterns: Sequence[str] | None,
    settings: Settings | None = None,
    progress: Progress | None = None,
    baseline: Callable[[], Provider] = lambda: Provider([]),
) -> dict[str, Any]:
    """Calibrate every target: the report, with the machine it ran on."""
    from cryptoffload.tools.bench import machine

    settings = settings or Settings()
    engines = [calibrate_engine(t, patterns, settings, progress, baseline) for t in targets.engines]
    return {
        "machine": machine.describe(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "settings": {
            "low": settings.low,
            "high": settings.high,
            "step": round(settings.step, 4),
            "seconds": settings.seconds,
            "trials": settings.trials,
            "algorithms": list(patterns) if patterns else [],
        },
        "engines": engines,
        "not_found": dict(targets.absent),
    }


def policy_from(report: Mapping[str, Any], base: Policy | None = None) -> Policy:
    """``base`` (or an empty policy) with a section per calibrated engine: ``min_size`` and
    ``max_size`` where it wins, ``exclude`` where it never does and where the gain is not
    significant (software, the cheaper path to run). The figures go under ``calibration``
    (machine, engines, per algorithm the verdict, its reason and confidence, the points)."""
    data = base.to_dict() if base is not None else Policy().to_dict()
    sections = dict(data.get("engines", {}))
    for engine in report["engines"]:
        if not engine["available"]:
            continue
        section: dict[str, Any] = {"min_size": {}, "max_size": {}, "exclude": []}
        for r in engine["results"]:
            if r["kind"] in ("never", NO_GAIN):
                section["exclude"].append(r["algorithm"])
            else:
                section["min_size"][r["algorithm"]] = r["min_size"]
                if r["max_size"] is not None:
                    section["max_size"][r["algorithm"]] = r["max_size"]
        sections[engine["name"]] = section
    data["engines"] = sections
    data["calibration"] = _toml_ready(
        {
            "tool": "cryptoffload calibrate",
            "date": report["date"],
            "machine": report["machine"],
            "settings": report["settings"],
            "engines": [
                {k: v for k, v in e.items() if k != "results"} | {"results": e["results"]}
                for e in report["engines"]
            ],
        }
    )
    return Policy.from_dict(data, source="calibration")


def write(policy: Policy, path: str | Path, command: str) -> None:
    """Save ``policy`` with a comment saying what wrote it."""
    import tomli_w

    head = (
        f"# Written by `{command}`.\n"
        "# Thresholds per engine under [engines]; the measurements behind them under\n"
        "# [calibration] (kept by Policy.load, not used for routing). Load with\n"
        "# cryptoffload.Policy.load(PATH) or CRYPTOFFLOAD_POLICY=PATH.\n\n"
    )
    Path(path).write_text(head + tomli_w.dumps(policy.to_dict()), encoding="utf-8")


def _toml_ready(value: Any) -> Any:
    """Plain data TOML can hold: None left out, tuples as lists, other values as text."""
    if isinstance(value, Mapping):
        return {str(k): _toml_ready(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_toml_ready(v) for v in value if v is not None]
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def load_base(path: str | Path) -> Policy | None:
    """The policy already at ``path`` (its other engines and entries are kept), or None."""
    path = Path(path)
    if not path.exists():
        return None
    return Policy.load(path)
