"""Calibration's decisions from injected measurements: significance, hysteresis, confidence."""

from __future__ import annotations

import pytest

from cryptoffload.tools import calibrate
from cryptoffload.tools.calibrate_stats import (
    NO_GAIN,
    assess,
    confirmed,
    fewest_pairs,
    routes_engine,
    sign_test_p,
    verdict,
)

SOFTWARE = [100.0, 104.0, 96.0, 102.0, 98.0]  # a 8% spread


def at(size: int, engine: list[float], software: list[float] = SOFTWARE) -> dict:
    return {"size": size, **assess(engine, software)}


def times(ratio: float) -> list[float]:
    """Engine rates ``ratio`` times software's in every pair (same spread)."""
    return [ratio * s for s in SOFTWARE]


def test_sign_test_p_values_and_the_fewest_pairs_that_can_decide():
    assert sign_test_p(5, 5) == 1 / 32
    assert sign_test_p(4, 5) == 6 / 32
    assert sign_test_p(7, 8) == 9 / 256
    assert sign_test_p(0, 3) == 1.0
    assert fewest_pairs() == 5  # 4 of 4 is p = 1/16, above 5%


def test_a_difference_the_pairs_do_not_agree_on_is_no_significant_gain():
    point = assess([103.0, 101.0, 99.0, 105.0, 100.0], SOFTWARE)  # 4 of 5 pairs, +3%
    assert point["decision"] == "software" and point["reason"] == NO_GAIN
    assert point["won"] == 0.8 and point["p"] == pytest.approx(6 / 32)
    assert not point["significant"]


def test_a_clear_engine_win_in_every_pair_goes_to_the_engine():
    point = assess(times(1.5), SOFTWARE)
    assert point["decision"] == "engine" and point["reason"] == "engine faster"
    assert point["won"] == 1.0 and point["p"] == pytest.approx(1 / 32)
    assert point["ratio"] == pytest.approx(1.5) and point["band"] == pytest.approx(0.08)


def test_a_large_ratio_from_a_few_lucky_pairs_is_not_significant():
    # Three lucky pairs move the median; the engine won only 3 of 5 pairs (p = 0.5).
    engine = [300.0, 300.0, 300.0, 90.0, 90.0]
    software = [100.0, 100.0, 100.0, 110.0, 110.0]
    point = assess(engine, software)
    assert point["ratio"] > 2 and point["won"] == 0.6 and point["p"] == 0.5
    assert point["decision"] == "software" and point["reason"] == NO_GAIN


def test_noise_common_to_both_sides_of_a_pair_cancels():
    # The machine's speed swings by 2.7x between trials (a 100% spread on each side), and the
    # engine is 1.2x faster in every pair: the pairs see it where the separate spreads do not.
    software = [100.0, 160.0, 60.0, 120.0, 90.0]
    point = assess([1.2 * s for s in software], software)
    assert point["band"] == pytest.approx(1.0) and point["ratio"] == pytest.approx(1.2)
    assert point["decision"] == "engine" and point["p"] == pytest.approx(1 / 32)


def test_a_win_in_every_pair_below_the_margin_is_no_significant_gain():
    point = assess(times(1.04), SOFTWARE)
    assert point["won"] == 1.0 and point["p"] == pytest.approx(1 / 32)
    assert point["decision"] == "software" and point["reason"] == NO_GAIN


def test_eight_pairs_let_one_spoilt_trial_go_the_other_way():
    software = [100.0] * 8
    engine = [150.0] * 7 + [40.0]  # one engine trial hit by the machine's other work
    point = assess(engine, software)
    assert point["won"] == 0.875 and point["p"] == pytest.approx(9 / 256, abs=1e-6)
    assert point["decision"] == "engine"
    assert calibrate.Settings().trials == 8


def test_software_faster_beyond_the_noise_and_a_declined_size():
    slow = assess(times(0.5), SOFTWARE)
    assert slow["decision"] == "software" and slow["reason"] == "software faster"
    assert slow["won"] == 0.0 and slow["p"] == pytest.approx(1 / 32)
    declined = assess(times(1.0), SOFTWARE, declined="too-large x3")
    assert declined["decision"] == "software" and declined["reason"] == "engine declined"


def test_a_crossover_is_placed_with_hysteresis_past_a_lucky_size():
    points = [
        at(16, times(0.3)),
        at(256, times(0.5)),
        at(1024, times(1.5)),  # a lucky size: the next one up loses
        at(2048, times(0.9)),
        at(4096, times(1.3)),
        at(8192, times(2.0)),
        at(65536, times(4.0)),
    ]
    assert [p["decision"] == "engine" for p in points] == [0, 0, 1, 0, 1, 1, 1]
    assert confirmed(points) == [False, False, False, False, True, True, True]
    result = verdict(points, bulk=True)
    assert result["kind"] == "crosses" and result["min_size"] == 4096
    assert result["max_size"] is None
    assert result["confidence"] == pytest.approx(1 - 1 / 32)
    assert routes_engine(result, 4096) and not routes_engine(result, 2048)


def test_a_win_at_the_largest_size_alone_is_not_kept():
    lonely = [at(16, times(0.5)), at(1024, times(0.5)), at(65536, times(2.0))]
    result = verdict(lonely, bulk=True)
    assert result["kind"] == NO_GAIN and "hysteresis" in result["reason"]
    assert "confidence" not in result and not routes_engine(result, 65536)
    held = [at(16, times(0.5)), at(1024, times(2.0)), at(65536, times(2.0))]
    assert verdict(held, bulk=True)["min_size"] == 1024


def test_verdicts_without_an_engine_win_and_their_confidence():
    noise = [at(16, times(1.02)), at(65536, times(0.98))]
    assert verdict(noise, bulk=True) == {
        "kind": NO_GAIN,
        "min_size": None,
        "max_size": None,
        "reason": NO_GAIN,
    }
    never = verdict([at(16, times(0.1)), at(65536, times(0.5))], bulk=True)
    assert never["kind"] == "never" and never["reason"] == "software faster at every size"
    assert never["confidence"] == pytest.approx(1 - 1 / 32)
    partly = verdict([at(16, times(0.1)), at(65536, times(1.01))], bulk=True)
    assert partly["kind"] == "never" and "no significant gain" in partly["reason"]


def test_one_point_of_a_public_key_algorithm_needs_no_neighbour():
    assert verdict([at(0, times(3.0))], bulk=False)["kind"] == "always"
    assert verdict([at(0, times(1.01))], bulk=False)["kind"] == NO_GAIN


def test_no_significant_gain_is_written_as_software_with_its_reason():
    points = [at(16, times(1.02)), at(65536, times(0.99))]
    result = {"algorithm": "sha256", **verdict(points, bulk=True), "points": points}
    engine = {"name": "e", "origin": "", "available": True, "reason": "", "skipped": {}}
    report = {
        "date": "2026-12-03T00:00:00+00:00",
        "machine": {},
        "settings": {},
        "engines": [engine | {"results": [result]}],
    }
    policy = calibrate.policy_from(report)
    assert policy.excludes("sha256", "e")
    (saved,) = policy.calibration["engines"][0]["results"]
    assert saved["kind"] == NO_GAIN and saved["reason"] == NO_GAIN
    # Every pair won (p = 1/32), by 2%, under the 5% margin: not significant.
    assert saved["points"][0]["p"] == pytest.approx(1 / 32)
    assert saved["points"][0]["significant"] is False
