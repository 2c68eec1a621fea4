"""Whether two runs differ beyond the noise: an exact Mann-Whitney U (rank-sum) test on trials.

Trial rates are not normal (a busy moment makes one trial slow, never one fast), so the test
uses ranks only. With few trials it is exact: the p-value counts, among every way of splitting
the pooled trials into two groups of the same sizes, those whose rank sum is at least as far
from its expected value as the one observed. Ties get mid-ranks and are counted exactly too.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple

from cryptoffload.tools.bench.timing import summarize

#: The confidence a change must reach to be called beyond the noise.
CONFIDENCE = 0.95

#: Up to this many trials in all the p-value is exact; above, the normal approximation.
EXACT_UP_TO = 40


def smallest_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p-value the exact test can give with ``n1`` and ``n2`` trials."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def trials_needed(confidence: float = CONFIDENCE) -> int:
    """The fewest trials per run (the same in both) with which the test can reach ``confidence``."""
    n = 1
    while smallest_p_value(n, n) > 1 - confidence:
        n += 1
    return n


def _doubled_midranks(pooled: Sequence[float]) -> dict[float, int]:
    """Twice the mid-rank of each value (an integer, so sums compare exactly)."""
    ordered = sorted(pooled)
    ranks: dict[float, int] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[i]:
            j += 1
        ranks[ordered[i]] = (i + 1) + (j + 1)
        i = j + 1
    return ranks


def rank_sum_p_value(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test that ``a`` and ``b`` share a distribution."""
    n1, n2 = len(a), len(b)
    if n1 < 1 or n2 < 1:
        return 1.0
    ranks = _doubled_midranks([*a, *b])
    scores = [ranks[v] for v in (*a, *b)]
    observed = sum(ranks[v] for v in a)
    mean = n1 * (n1 + n2 + 1)  # twice the expected rank sum of ``a``
    if n1 + n2 > EXACT_UP_TO:
        return _normal_p_value(scores, n1, observed - mean)
    # ways[k][s]: how many k-subsets of the pooled scores sum to s.
    ways: list[dict[int, int]] = [{} for _ in range(n1 + 1)]
    ways[0][0] = 1
    for score in scores:
        for k in range(n1, 0, -1):
            row = ways[k]
            for total, count in ways[k - 1].items():
                row[total + score] = row.get(total + score, 0) + count
    far = abs(observed - mean)
    extreme = sum(count for total, count in ways[n1].items() if abs(total - mean) >= far)
    return min(1.0, extreme / math.comb(n1 + n2, n1))


def _normal_p_value(scores: list[int], n1: int, deviation: float) -> float:
    """The normal approximation of the rank-sum distribution (variance corrected for ties)."""
    n = len(scores)
    var = n1 * (n - n1) / (n - 1) * statistics.pvariance(scores)  # drawn without replacement
    if var == 0:
        return 1.0
    z = abs(deviation) / math.sqrt(var)
    return math.erfc(z / math.sqrt(2))


class Verdict(NamedTuple):
    """What :func:`verdict` found: its word, the p-value, the wider of the two runs' spreads."""

    text: str  # "beyond noise", "within noise" or "too few trials"
    p_value: float | None  # None: too few trials for the test
    spread: float


def verdict(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> Verdict:
    """Whether run ``b``'s trial rates differ from run ``a``'s beyond the noise.

    Beyond noise takes both: the test rejects "one distribution" at ``confidence``, and the
    medians differ by more than either run's own spread ((max - min) / median, the bench's
    spread column). The test alone takes trials as independent; a machine that slows for a while
    (another job, a clock change) shifts a run's trials together, and widens its spread.
    """
    median_a, spread_a, _ = summarize(list(a))
    median_b, spread_b, _ = summarize(list(b))
    spread = max(spread_a, spread_b)
    if smallest_p_value(len(a), len(b)) > 1 - confidence:
        return Verdict("too few trials", None, spread)
    p = rank_sum_p_value(a, b)
    shift = abs(median_b / median_a - 1) if median_a else 0.0
    beyond = p <= 1 - confidence and shift > spread
    return Verdict("beyond noise" if beyond else "within noise", p, spread)
