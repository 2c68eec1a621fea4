"""Size sweeps: throughput per buffer size for software and engines, and where offload pays."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from cryptoffload.core.policy import Policy
from cryptoffload.tools.bench.cases import Case
from cryptoffload.tools.bench.runner import Progress, add_speedups, measure_case, row_providers
from cryptoffload.tools.bench.timing import harness_seconds_per_call

#: The QorIQ article's sweep: 64 B, 256 B, ~1400 B (a TLS record over Ethernet), 16 KiB.
DEFAULT_SIZES = (64, 256, 1400, 16384)


def crossover(points: Sequence[tuple[int, float]]) -> dict[str, Any]:
    """Where an engine/software ratio curve crosses 1, from (size, ratio) points.

    The crossing between two sizes is interpolated linearly in log(size) and log(ratio): the
    space of the plot, whose straight lines from point to point on log-log axes give a log
    ratio (the gap between two curves) that is linear in log(size), so the estimate is where
    the drawn curves cross. Returns a dict with ``size`` (bytes, or None) and ``kind``:
    "crosses" (slower below, faster above), "always" (faster at every size measured), "never"
    (slower at every size), "falls" (faster below, slower above), or "no data".
    """
    pts = sorted((s, r) for s, r in points if r is not None and r > 0 and s > 0)
    if not pts:
        return {"size": None, "kind": "no data"}
    if all(r >= 1 for _, r in pts):
        return {"size": pts[0][0], "kind": "always"}
    if all(r < 1 for _, r in pts):
        return {"size": None, "kind": "never"}
    for (s0, r0), (s1, r1) in itertools.pairwise(pts):
        if (r0 < 1) != (r1 < 1):
            x0, x1 = math.log(s0), math.log(s1)
            y0, y1 = math.log(r0), math.log(r1)
            x = x0 - y0 * (x1 - x0) / (y1 - y0)  # where log(ratio) is 0
            return {"size": round(math.exp(x)), "kind": "crosses" if r0 < 1 else "falls"}
    return {"size": None, "kind": "no data"}  # unreachable: a sign change exists


def run(
    cases: Sequence[Case],
    engines: Sequence[Any],
    sizes: Sequence[int],
    seconds: float,
    trials: int,
    policy: Policy | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Rows for every case, engine and size; crossovers per case and engine."""
    providers = row_providers(engines, policy)
    harness = harness_seconds_per_call()
    rows: list[dict[str, Any]] = []
    for case in cases:
        for size in sizes if case.bulk else sizes[:1]:
            rows += measure_case(
                case,
                providers,
                size,
                seconds,
                trials,
                harness,
                False,
                progress,
                where=f" {size} B",
            )
    add_speedups(rows)
    crossovers = []
    for case in cases:
        for p in providers[1:]:  # software's row is the baseline, not a curve
            if p.unavailable is not None:
                continue  # nothing measured: its rows say why, and there is no curve to cross
            name = p.name
            points = [
                (r["block"], r["speedup"])
                for r in rows
                if r["algorithm"] == case.algorithm
                and r["operation"] == case.operation
                and r["engine"] == name
                and r["block"]
            ]
            crossovers.append(
                {
                    "algorithm": case.algorithm,
                    "operation": case.operation,
                    "engine": name,
                    **crossover(points),
                }
            )
    return {
        "settings": {
            "sizes": list(sizes),
            "time": seconds,
            "trials": trials,
            "engines": [p.name for p in providers],
            "algorithms": [c.label for c in cases],
            "harness_ns_per_call": round(harness * 1e9, 1),
        },
        "rows": rows,
        "crossovers": crossovers,
    }
