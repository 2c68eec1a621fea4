"""`calibrate --check`: re-measure a written policy's decisions and say whether each still holds.

For every engine and algorithm the policy's ``calibration`` table recorded, the sizes measured
then are measured again (same trials and seconds unless overridden) and decided as calibrate
decides (:mod:`cryptoffload.tools.calibrate_stats`, hysteresis included). At each size the
policy's routing (its ``exclude``, ``min_size`` and ``max_size`` for that engine, as the
provider reads them) is compared with the routing the new measurement gives. A size holds when
the two agree, when the difference there is now within the noise (either path then costs the
same, as far as can be told), or when it is one of the two sizes measured next to a threshold
of the policy (a threshold moved by one step of the search is the calibration's resolution):
only a significant contradiction away from a threshold breaks a decision, so noise alone does
not. An engine that is not available now holds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cryptoffload.core.policy import Policy
from cryptoffload.core.provider import Provider
from cryptoffload.tools import calibrate
from cryptoffload.tools.calibrate_stats import routes_engine, verdict
from cryptoffload.tools.targets import probed
from cryptoffload.tools.verify import TAKE_ALL, select


class NothingToCheck(ValueError):
    """The policy has no calibration table to re-measure (a usage error)."""


def recorded(policy: Policy) -> list[Mapping[str, Any]]:
    """The engines the policy's calibration measured, with their results."""
    engines = (policy.calibration or {}).get("engines")
    if not engines:
        raise NothingToCheck(
            "the policy holds no [calibration] engines to re-measure; write one with "
            "`cryptoffload calibrate --write PATH`"
        )
    return [e for e in engines if e.get("results")]


def settings_for(policy: Policy, seconds: float | None, trials: int | None) -> calibrate.Settings:
    """The recorded settings, ``seconds`` and ``trials`` overriding them when given."""
    saved = (policy.calibration or {}).get("settings", {})
    base = calibrate.Settings()
    return calibrate.Settings(
        low=int(saved.get("low", base.low)),
        high=int(saved.get("high", base.high)),
        seconds=seconds if seconds is not None else float(saved.get("seconds", base.seconds)),
        trials=trials if trials is not None else int(saved.get("trials", base.trials)),
    )


def check_result(
    policy: Policy,
    name: str,
    engine_min: Mapping[str, int] | None,
    old: Mapping[str, Any],
    measure: Callable[[int], dict[str, Any]],
) -> dict[str, Any]:
    """One algorithm: its recorded sizes measured again through ``measure`` and compared."""
    alg = old["algorithm"]
    sizes = [int(p["size"]) for p in old["points"]]
    bulk = any(sizes)
    points = [measure(size) for size in sizes]
    now = verdict(points, bulk)
    low, high = policy.limits(alg, engine_min, name)
    excluded = policy.excludes(alg, name)
    routed_at = [not excluded and s >= low and (high is None or s <= high) for s in sizes]
    # The sizes on either side of a threshold of the policy: a threshold is placed to one step
    # of the search, so a threshold moved by one step is the calibration's resolution, not a
    # decision broken.
    edge = {j for i in range(1, len(sizes)) if routed_at[i] != routed_at[i - 1] for j in (i - 1, i)}
    rows = []
    for i, (size, point) in enumerate(zip(sizes, points, strict=True)):
        routed = routed_at[i]
        wanted = routes_engine(now, size)
        holds = routed == wanted or not point["significant"] or i in edge
        why = ""
        if routed != wanted and point["significant"]:
            why = "engine now faster" if wanted else "software now faster"
            if holds:
                why += " (the threshold moved by one step: holds)"
        rows.append(
            {"size": size, "routed": "engine" if routed else "software"}
            | {"now": "engine" if wanted else "software", "holds": holds, "why": why}
            | {k: point[k] for k in ("ratio", "band", "won", "p", "reason")}
        )
    return {
        "algorithm": alg,
        "policy": "exclude" if excluded else {"min_size": low, "max_size": high},
        "recorded": {k: old.get(k) for k in ("kind", "min_size", "max_size", "confidence")},
        "now": now,
        "sizes": rows,
        "holds": all(r["holds"] for r in rows),
    }


def check(
    policy: Policy,
    names: Sequence[str] | None = None,
    patterns: Sequence[str] | None = None,
    settings: calibrate.Settings | None = None,
    progress: calibrate.Progress | None = None,
    baseline: Callable[[], Provider] = lambda: Provider([]),
) -> dict[str, Any]:
    """Re-measure every recorded decision (of the engines ``names``, algorithms ``patterns``)."""
    from cryptoffload.engines import from_spec

    settings = settings or settings_for(policy, None, None)
    out: dict[str, Any] = {"engines": [], "settings": {"seconds": settings.seconds}}
    out["settings"]["trials"] = settings.trials
    base = baseline()
    for saved in recorded(policy):
        name = saved["name"]
        if names and name not in names:
            continue
        target = probed(from_spec(name))
        entry: dict[str, Any] = {"name": name, "available": target.caps.available}
        entry |= {"reason": target.caps.reason, "results": []}
        out["engines"].append(entry)
        if not target.caps.available:
            continue
        engine = Provider([target.engine], policy=TAKE_ALL)
        wanted = set(select([r["algorithm"] for r in saved["results"]], patterns))
        for old in saved["results"]:
            case = calibrate.case_for(old["algorithm"])
            if old["algorithm"] not in wanted or case is None:
                continue
            if progress is not None:
                progress(f"{name} {old['algorithm']}")

            def measure(
                size: int,
                case: calibrate.Case = case,
                engine: Provider = engine,
                name: str = name,
            ) -> dict[str, Any]:
                size = size or settings.low
                return calibrate.measure_point(case, engine, base, name, size, settings)

            entry["results"].append(check_result(policy, name, target.caps.min_size, old, measure))
    out["holds"] = bool(out["engines"]) and all(
        e["available"] and all(r["holds"] for r in e["results"]) for e in out["engines"]
    )
    return out
