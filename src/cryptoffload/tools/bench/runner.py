"""Run benchmark rows: software and each engine over the same buffers, counters read around each."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptoffload.core.counters import diff
from cryptoffload.core.policy import Policy
from cryptoffload.core.provider import SOFTWARE, Provider
from cryptoffload.tools.bench import cpu as _cpu
from cryptoffload.tools.bench import machine
from cryptoffload.tools.bench.cases import MIB, Case
from cryptoffload.tools.bench.timing import harness_seconds_per_call, measure, summarize

#: Engine rows measure what the engine can do at each size, so no threshold holds ops back.
TAKE_ALL = Policy(min_size={"*": 0})

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RowEngine:
    """What one row runs on: an engine by name, with software behind it in its own provider.

    ``unavailable`` is the engine's reason when it is not available here: such a row is
    reported, never measured (its provider would only run software).
    """

    name: str
    provider: Provider
    unavailable: str | None = None


def row_providers(engines: Sequence[Any], policy: Policy | None) -> list[RowEngine]:
    """Software alone, then one provider per engine (software behind it): one engine per row."""
    rows = [RowEngine(SOFTWARE, Provider([]))]
    for engine in engines:
        provider = Provider([engine], policy=policy or TAKE_ALL)
        name = engine.name
        if any(r.name == name for r in rows):
            raise ValueError(f"engine {name!r} is named twice")
        rows.append(RowEngine(name, provider, provider.unavailable.get(name)))
    return rows


def unavailable(engines: Sequence[Any]) -> dict[str, str]:
    """The engines among ``engines`` that are not available here, each with its reason."""
    return {r.name: r.unavailable for r in row_providers(engines, None) if r.unavailable}


def _activity(provider: Provider, name: str, alg: str, before: dict) -> dict[str, Any]:
    changed = diff(before, provider.counters.snapshot())
    mine = changed.get(name, {}).get(alg, {})
    total = sum(algs.get(alg, {}).get("ops", 0) for algs in changed.values())
    return {
        "ops": mine.get("ops", 0),
        "declined": mine.get("declined", {}),
        "faults": mine.get("faults", 0),
        "total_ops": total,
    }


def _figures_reader(provider: Provider, engine: str) -> Callable[[], dict[str, Any] | None]:
    """What reads engine ``engine``'s own ``figures`` (None for an engine that keeps none)."""
    found = next((e for e in provider.engines if e.name == engine), None)

    def read() -> dict[str, Any] | None:
        figures = getattr(found, "figures", None) if engine != SOFTWARE else None
        return dict(figures) if isinstance(figures, Mapping) and figures else None

    return read


def figures_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """How an engine's figures moved over a row: each number's change (levels such as jobs in
    flight or DMA memory in use too), a table of numbers (errors by status) by entry, leaving
    out entries that did not move; anything else as it is after the row."""
    out: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, (int, float)) and isinstance(old, (int, float)):
            out[key] = value - old
        elif isinstance(value, Mapping):
            old = old if isinstance(old, Mapping) else {}
            out[key] = {
                k: v - old.get(k, 0)
                for k, v in value.items()
                if isinstance(v, (int, float)) and v != old.get(k, 0)
            }
        else:
            out[key] = value
    return out


def measure_row(
    case: Case,
    provider: Provider,
    engine: str,
    block: int,
    seconds: float,
    trials: int,
    harness: float,
    with_cpu: bool,
) -> dict[str, Any]:
    """Time one case on one provider and say whether ``engine`` really did the work."""
    row = _unmeasured_row(case, engine, block)
    caps = provider.capabilities.get(engine)
    if engine != SOFTWARE and (caps is None or case.algorithm not in caps.algorithms):
        row["note"] = "not claimed by the engine"
        return row
    figures_of = _figures_reader(provider, engine)
    try:
        fn = case.build(provider, block)
        before = provider.counters.snapshot()
        figures_before = figures_of()
        result = measure(fn, seconds, trials)
    except Exception as exc:  # a row that cannot run is reported, the run goes on
        row["note"] = f"failed: {type(exc).__name__}: {exc}"
        return row
    activity = _activity(provider, engine, case.algorithm, before)
    if figures_before is not None:
        row["figures"] = figures_change(figures_before, figures_of() or {})
    scale = block / MIB if case.bulk else 1.0
    rates = result.rates(scale)
    median, spread, noisy = summarize(rates)
    # Software doing the work is the baseline, not an offload: only engine rows can offload.
    offloaded = engine != SOFTWARE and activity["ops"] > 0
    share = activity["ops"] / activity["total_ops"] if offloaded and activity["total_ops"] else 0.0
    row.update(
        trials=[round(r, 3) for r in rates],
        spread=round(spread, 4),
        noisy=noisy,
        offloaded=offloaded,
        offload_share=round(share, 4),
        declined=activity["declined"],
        faults=activity["faults"],
        harness_share=round(harness * result.ops / result.wall, 4) if result.wall else None,
    )
    if row["offloaded"] or engine == SOFTWARE:
        row["median"] = round(median, 3)
    else:
        reasons = ", ".join(f"{r} x{n}" for r, n in activity["declined"].items()) or (
            "faults" if activity["faults"] else "nothing reached it"
        )
        row["note"] = f"not offloaded ({reasons})"
        row["fallback_median"] = round(median, 3)
    if with_cpu:
        row["cpu"] = _cpu.accounting(result.wall, result.user, result.sys)
    return row


def _unmeasured_row(case: Case, engine: str, block: int) -> dict[str, Any]:
    return {
        "algorithm": case.algorithm,
        "operation": case.operation,
        "engine": engine,
        "block": block if case.bulk else None,
        "unit": case.unit,
        "median": None,
        "trials": [],
        "spread": None,
        "noisy": False,
        "offloaded": False,
        "offload_share": 0.0,
        "note": "",
    }


def unavailable_row(case: Case, engine: str, block: int, reason: str) -> dict[str, Any]:
    """The row of an engine that is not available here: its reason, no speed."""
    row = _unmeasured_row(case, engine, block)
    row["note"] = f"not available: {reason}"
    row["unavailable"] = reason
    return row


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while measuring: ``rows`` measured before it, and from :func:`run` ``result``,
    the report of those rows, so that the command can print them before it stops."""

    def __init__(self, rows: list[dict[str, Any]], result: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.rows = rows
        self.result = result


def measure_case(
    case: Case,
    providers: Sequence[RowEngine],
    block: int,
    seconds: float,
    trials: int,
    harness: float,
    with_cpu: bool,
    progress: Progress | None,
    where: str = "",
) -> list[dict[str, Any]]:
    """One row per provider (software's first) for ``case`` at ``block`` bytes."""
    rows: list[dict[str, Any]] = []
    try:
        for p in providers:
            if progress is not None:
                progress(f"{case.label}{where} [{p.name}]")
            if p.unavailable is not None:
                rows.append(unavailable_row(case, p.name, block, p.unavailable))
            else:
                rows.append(
                    measure_row(case, p.provider, p.name, block, seconds, trials, harness, with_cpu)
                )
    except KeyboardInterrupt:
        raise Interrupted(rows) from None
    return rows


def add_speedups(rows: list[dict[str, Any]]) -> None:
    """Speedup of each row against the software row of the same algorithm, operation and size."""
    software = {
        (r["algorithm"], r["operation"], r["block"]): r["median"]
        for r in rows
        if r["engine"] == SOFTWARE and r["median"]
    }
    for r in rows:
        base = software.get((r["algorithm"], r["operation"], r["block"]))
        r["speedup"] = round(r["median"] / base, 3) if base and r["median"] else None


def run(
    cases: Sequence[Case],
    engines: Sequence[Any],
    block: int,
    seconds: float,
    trials: int,
    with_cpu: bool = False,
    policy: Policy | None = None,
    progress: Progress | None = None,
    extra_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Software row then one row per engine, for every case; the JSON report.

    An engine that is not available here gets rows that say so, with its reason, and no speed.
    Ctrl-C raises :class:`Interrupted` with the report of the rows measured before it.
    """
    providers = row_providers(engines, policy)
    harness = harness_seconds_per_call()
    rows: list[dict[str, Any]] = []
    interrupted = False
    try:
        for case in cases:
            rows += measure_case(
                case, providers, block, seconds, trials, harness, with_cpu, progress
            )
    except Interrupted as exc:
        rows += exc.rows
        interrupted = True
    add_speedups(rows)
    described = Provider(list(engines)) if engines else providers[0].provider
    result = {
        "machine": machine.describe(described),
        "settings": {
            "block": block,
            "time": seconds,
            "trials": trials,
            "cpu": with_cpu,
            "policy": "configured" if policy is not None else "take-all",
            "engines": [p.name for p in providers],
            "algorithms": [c.label for c in cases],
            "harness_ns_per_call": round(harness * 1e9, 1),
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            **(extra_settings or {}),
        },
        "rows": rows,
    }
    if interrupted:
        raise Interrupted(rows, result)
    return result
