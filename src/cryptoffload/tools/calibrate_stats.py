"""Calibration's decisions: per size, engine or software, only on a difference beyond the noise.

Each size is measured in ``n`` paired trials: trial ``i`` of the engine and trial ``i`` of
software ran next to each other (in alternating order), so a slow spell of the machine hits
both sides of a pair and cancels in the pair's ratio ``r_i`` (engine rate / software rate).
The decision rests on those paired ratios, not on the two sides' separate spreads (which a busy
machine inflates with noise common to both):

* **Sign test**: the side that is faster by the median paired ratio won ``k`` of the ``n``
  pairs; under "no difference" each pair is a fair coin, so ``p = P(X >= k)``, X ~ Binomial(n,
  1/2), is the chance of so lopsided a result by noise alone. Significant when ``p <= ALPHA``
  (5%): with 5 pairs that takes all 5 (p = 1/32), with 8 pairs 7 of 8 (p = 0.035). This is the
  same as asking that the measured spread of the paired ratios, read as a distribution-free
  one-sided 95% confidence bound on their median (an order statistic), lie wholly beyond 1.
* **Margin**: the median paired ratio must differ from 1 by more than :data:`MARGIN` (5%): a
  smaller gain is not worth an engine's round trip, and it is within the 95% goal anyway.

The figure written as a decision's **confidence** is ``1 - p``. ``band``, the wider of the two
sides' spreads ((max - min) / median), is kept as the noise figure shown with the ratio.

A size where either test fails is "no significant gain": software, the cheaper path to run
(no engine round trip, nothing to go wrong). A size the engine declined is software's.

**Hysteresis**: an engine win at one size is kept only when a neighbouring size measured (the
next one up or the next one down) is a significant engine win too: a win stands only in a run
of two or more sizes, so one lucky size cannot place a crossover (or a ``max_size``); a
single-point algorithm (public key) needs none.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

#: Largest sign-test p-value taken as significant.
ALPHA = 0.05
#: Smallest difference (as a ratio away from 1) taken as a gain or a loss.
MARGIN = 0.05

NO_GAIN = "no significant gain"


def sign_test_p(wins: int, pairs: int) -> float:
    """One-sided sign test: the chance of ``wins`` or more of ``pairs`` fair coin tosses."""
    if pairs <= 0:
        return 1.0
    return sum(math.comb(pairs, k) for k in range(wins, pairs + 1)) / 2**pairs


def fewest_pairs() -> int:
    """The fewest paired trials with which a unanimous result reaches :data:`ALPHA`."""
    return next(n for n in itertools.count(1) if sign_test_p(n, n) <= ALPHA)


def _spread(values: Sequence[float]) -> float:
    median = statistics.median(values)
    return (max(values) - min(values)) / median if median else 0.0


def assess(
    engine: Sequence[float], software: Sequence[float], declined: str | None = None
) -> dict[str, Any]:
    """The figures and decision of one size from paired per-trial rates (higher is faster).

    Returns ``engine``/``software`` (medians), ``ratio`` (the median paired ratio), ``band``,
    ``won`` (share of pairs the engine won), ``p`` (sign test for the faster side), ``decision``
    ("engine" or "software") and ``reason``; ``declined`` (the engine did not take the work)
    is kept and decides for software."""
    pairs = min(len(engine), len(software))
    if pairs == 0:
        raise ValueError("no trials to assess")
    ratios = [e / s if s else 0.0 for e, s in zip(engine, software, strict=False)]
    ratio = statistics.median(ratios)
    band = max(_spread(engine), _spread(software))
    engine_won = sum(r > 1 for r in ratios)
    faster = engine_won if ratio > 1 else pairs - engine_won
    p = sign_test_p(faster, pairs)
    beyond = ratio <= 0 or abs(math.log(ratio)) > math.log1p(MARGIN)
    significant = beyond and p <= ALPHA
    point: dict[str, Any] = {
        "engine": round(statistics.median(engine), 3),
        "software": round(statistics.median(software), 3),
        "ratio": round(ratio, 4),
        "band": round(band, 4),
        "won": round(engine_won / pairs, 3),
        "p": round(p, 6),
        "significant": significant,
    }
    if declined is not None:
        point.update(declined=declined, decision="software", reason="engine declined")
    elif not significant:
        point.update(decision="software", reason=NO_GAIN)
    elif ratio > 1:
        point.update(decision="engine", reason="engine faster")
    else:
        point.update(decision="software", reason="software faster")
    return point


def confirmed(points: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Per point, whether the engine is chosen there after hysteresis (see the module)."""
    chosen = [p["decision"] == "engine" for p in points]
    if len(chosen) < 2:
        return chosen
    out = []
    for i, win in enumerate(chosen):
        below = i > 0 and chosen[i - 1]
        above = i + 1 < len(chosen) and chosen[i + 1]
        out.append(win and (below or above))
    return out


def verdict(points: Sequence[Mapping[str, Any]], bulk: bool) -> dict[str, Any]:
    """Where the engine pays: ``kind`` "always", "crosses" (from ``min_size`` up), "falls" (up
    to ``max_size``), "window", " (mixed)" added when it wins in more than one stretch (the
    highest kept); "never" (software faster beyond the noise somewhere, the engine nowhere) or
    "no significant gain". ``reason`` says why; ``confidence`` is 1 - the largest sign-test p of
    the points the decision rests on (absent for "no significant gain")."""
    chosen = confirmed(points)
    if not any(chosen):
        if any(p["decision"] == "engine" for p in points):
            why = f"{NO_GAIN}: no engine win confirmed at the neighbouring size (hysteresis)"
            return _result(NO_GAIN, None, None, why, None)
        losses = [p for p in points if p["reason"] != NO_GAIN]
        if not losses:
            return _result(NO_GAIN, None, None, NO_GAIN, None)
        why = (
            "software faster at every size"
            if len(losses) == len(points)
            else "software faster at some sizes, no significant gain at the others"
        )
        return _result("never", None, None, why, _confidence(losses))
    if all(chosen):
        why = "engine faster beyond the noise at every size"
        return _result("always", 0, None, why, _confidence(points))
    runs = [list(g) for _, g in itertools.groupby(range(len(points)), key=lambda i: chosen[i])]
    stretches = [r for r in runs if chosen[r[0]]]
    best = stretches[-1]
    first, last = best[0], best[-1]
    low = 0 if first == 0 or not bulk else points[first]["size"]
    high = None if last == len(points) - 1 else points[last]["size"]
    kind = {(True, False): "crosses", (False, True): "falls"}.get((low > 0, high is not None))
    kind = kind or ("window" if bulk else "always")
    if len(stretches) > 1:
        kind += " (mixed)"
    why = "engine faster beyond the noise, confirmed at the neighbouring size"
    return _result(kind, low, high, why, _confidence([points[i] for i in best]))


def _confidence(basis: Sequence[Mapping[str, Any]]) -> float:
    """1 - the largest sign-test p of ``basis``; a size the engine declined is certain (the
    counters say so), so it counts as p = 0."""
    measured = [p["p"] for p in basis if "declined" not in p]
    return round(1 - max(measured, default=0.0), 6)


def _result(
    kind: str, low: int | None, high: int | None, reason: str, confidence: float | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "min_size": low, "max_size": high, "reason": reason}
    if confidence is not None:
        out["confidence"] = confidence
    return out


def routes_engine(result: Mapping[str, Any], size: int) -> bool:
    """Whether a verdict sends ``size`` bytes to the engine."""
    if result["min_size"] is None:
        return False
    high = result["max_size"]
    return size >= result["min_size"] and (high is None or size <= high)
