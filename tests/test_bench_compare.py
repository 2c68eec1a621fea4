"""`cryptoffload compare` on hand-built runs: the verdict's test, the table, the rows left over."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
from bench_rows import bench_row
from rich.console import Console

from cryptoffload.tools import cli
from cryptoffload.tools.bench import compare, stats

TIGHT = [99.0, 99.5, 100.0, 100.5, 101.0]


def _row(engine: str = "software", median: float | None = 100.0, **extra) -> dict:
    return bench_row(engine, median, **{"spread": None, "noisy": None, **extra})


def _run(*rows: dict) -> dict:
    return {"machine": {}, "settings": {}, "rows": list(rows)}


def _scaled(trials: list[float], factor: float) -> list[float]:
    return [t * factor for t in trials]


def _one(before: list[float], after: list[float]) -> dict:
    (change,) = compare.compare(
        _run(_row(median=sorted(before)[len(before) // 2], trials=before)),
        _run(_row(median=sorted(after)[len(after) // 2], trials=after)),
    )
    return change


# -- the verdict ------------------------------------------------------------------------------


def test_two_runs_of_identical_data_are_within_noise():
    change = _one(TIGHT, list(TIGHT))
    assert change["change"] == 0.0
    assert change["verdict"] == "within noise" and change["beyond_noise"] is False
    assert change["p_value"] == 1.0


def test_a_thirty_percent_change_with_tight_trials_is_beyond_noise():
    change = _one(TIGHT, _scaled(TIGHT, 1.3))
    assert change["change"] == pytest.approx(0.3)
    assert change["verdict"] == "beyond noise" and change["beyond_noise"] is True
    assert change["p_value"] == pytest.approx(2 / math.comb(10, 5), abs=1e-4)


def test_a_thirty_percent_slowdown_with_tight_trials_is_beyond_noise():
    change = _one(TIGHT, _scaled(TIGHT, 0.7))
    assert change["change"] == pytest.approx(-0.3)
    assert change["beyond_noise"] is True


def test_three_trials_apart_by_chance_are_too_few_to_tell():
    # The case: identical code, three trials each, +4.8%, ranges that do not overlap.
    change = _one([99.0, 100.0, 101.0], [103.8, 104.8, 105.9])
    assert change["change"] == pytest.approx(0.048)
    assert change["verdict"] == "too few trials" and change["beyond_noise"] is False
    assert change["p_value"] is None and change["n_trials"] == [3, 3]


def test_a_shift_within_a_runs_own_spread_is_within_noise_even_when_ranks_separate():
    # Every trial of the second run is faster, but the first run's trials span 22%.
    change = _one([80.0, 99.0, 100.0, 101.0, 102.0], [103.0, 104.0, 105.0, 106.0, 107.0])
    assert change["p_value"] < 0.05
    assert change["spread"] == pytest.approx(0.22)
    assert change["verdict"] == "within noise"


def test_interleaved_trials_are_within_noise():
    change = _one([95.0, 98.0, 101.0, 104.0, 107.0], [96.0, 99.0, 102.0, 105.0, 108.0])
    assert change["verdict"] == "within noise" and change["p_value"] > 0.5


def test_same_distribution_drawn_twice_is_rarely_beyond_noise():
    rng = random.Random(7)
    flagged = 0
    for _ in range(200):
        a = [rng.gauss(100, 2) for _ in range(5)]
        b = [rng.gauss(100, 2) for _ in range(5)]
        flagged += _one(a, b)["beyond_noise"]
    assert flagged <= 200 * (1 - stats.CONFIDENCE)


def test_rows_without_trials_use_the_medians_and_are_too_few_to_tell():
    (change,) = compare.compare(_run(_row(trials=[])), _run(_row(trials=[])))
    assert change["change"] == 0.0 and change["verdict"] == "too few trials"


# -- the test itself --------------------------------------------------------------------------


def _brute_p(a: list[float], b: list[float]) -> float:
    """Two-sided p-value by listing every split of the pooled trials (mid-ranks for ties)."""
    pooled = sorted(a + b)
    rank = {v: (pooled.index(v) + 1 + len(pooled) - pooled[::-1].index(v)) / 2 for v in pooled}
    scores = [rank[v] for v in a + b]
    mean = len(a) * (len(pooled) + 1) / 2
    observed = abs(sum(rank[v] for v in a) - mean)
    splits = list(itertools.combinations(range(len(scores)), len(a)))
    far = sum(abs(sum(scores[i] for i in s) - mean) >= observed - 1e-9 for s in splits)
    return far / len(splits)


@pytest.mark.parametrize(
    ("n1", "n2", "p"), [(3, 3, 0.1), (4, 4, 2 / 70), (5, 5, 2 / 252), (3, 5, 2 / 56)]
)
def test_complete_separation_gives_the_smallest_p_value(n1, n2, p):
    a, b = list(range(n1)), list(range(100, 100 + n2))
    assert stats.rank_sum_p_value(a, b) == pytest.approx(p)
    assert stats.rank_sum_p_value(b, a) == pytest.approx(p)
    assert stats.smallest_p_value(n1, n2) == pytest.approx(p)


def test_four_trials_each_are_the_fewest_that_reach_95_percent():
    assert stats.trials_needed(0.95) == 4
    assert stats.smallest_p_value(3, 3) > 0.05 >= stats.smallest_p_value(4, 4)


@pytest.mark.parametrize("seed", range(6))
def test_exact_p_value_matches_listing_every_split_with_ties(seed):
    rng = random.Random(seed)
    a = [float(rng.randint(1, 6)) for _ in range(rng.randint(2, 6))]
    b = [float(rng.randint(2, 7)) for _ in range(rng.randint(2, 6))]
    assert stats.rank_sum_p_value(a, b) == pytest.approx(_brute_p(a, b))


def test_large_samples_use_the_normal_approximation_sensibly():
    a = [100.0 + i * 0.1 for i in range(25)]
    assert stats.rank_sum_p_value(a, list(a)) == pytest.approx(1.0)
    assert stats.rank_sum_p_value(a, [x + 10 for x in a]) < 1e-6


# -- the table --------------------------------------------------------------------------------


def _printed(changes: list[dict], left: dict | None = None) -> str:
    console = Console(record=True, width=240)
    compare.print_comparison(changes, console, left, ("a.json", "b.json"))
    return console.export_text()


def test_every_column_has_a_header_and_both_values_show_units():
    changes = compare.compare(
        _run(_row(median=100.0, trials=TIGHT), _row(median=2000.0, block=None, unit="ops/s")),
        _run(_row(median=130.0, trials=_scaled(TIGHT, 1.3)), _row(median=2100.0, block=None,
             unit="ops/s")),
    )  # fmt: skip
    text = _printed(changes)
    (header,) = [line for line in text.splitlines() if "algorithm" in line]
    cells = [c.strip() for c in header.split("┃")[1:-1]]
    assert cells == [
        "algorithm", "operation", "engine", "block", "before", "after", "change", "verdict"
    ]  # fmt: skip
    rows = [line for line in text.splitlines() if "aes-128-gcm" in line]
    assert "100.00 MiB/s" in rows[0] and "130.00 MiB/s" in rows[0]
    assert "2,000.00 ops/s" in rows[1] and "2,100.00 ops/s" in rows[1]


def test_table_verdicts_and_the_legend_name_the_test_and_its_confidence():
    changes = compare.compare(
        _run(_row(median=100.0, trials=TIGHT), _row("caam", 50.0, trials=[49.0, 50.0, 51.0])),
        _run(_row(median=130.0, trials=_scaled(TIGHT, 1.3)), _row("caam", 52.0,
             trials=[51.0, 52.0, 53.0])),
    )  # fmt: skip
    text = _printed(changes)
    assert "+30.0%" in text and "beyond noise (p=0.008" in text
    assert "too few trials to tell (3 vs 3)" in text
    legend = " ".join(text.split())
    assert "Mann-Whitney U" in legend and "95% confidence" in legend
    assert "4 or more trials in each run" in legend


# -- rows that are not compared ---------------------------------------------------------------


def test_rows_in_one_run_only_or_unmeasured_are_listed():
    shared = _row("software", 100.0)
    before = _run(shared, _row(algorithm="sha256", operation="digest"), _row("decliner", 90.0))
    after = _run(
        shared,
        _row(algorithm="sha384", operation="digest"),
        _row("decliner", None, note="not offloaded (unsupported x3)"),
        _row(block=1024),
    )
    changes = compare.compare(before, after)
    assert [(c["algorithm"], c["engine"], c["block"]) for c in changes] == [
        ("aes-128-gcm", "software", 16384)
    ]
    left = compare.unmatched(before, after)
    assert left == {
        "only_before": ["sha256 digest on software at 16 KiB"],
        "only_after": [
            "sha384 digest on software at 16 KiB",
            "aes-128-gcm encrypt on software at 1 KiB",
        ],
        "unmeasured": ["aes-128-gcm encrypt on decliner at 16 KiB"],
    }
    text = _printed(changes, left)
    assert "not compared, only in a.json (1): sha256 digest on software at 16 KiB" in text
    assert "not compared, only in b.json (2): sha384 digest on software at 16 KiB; " in text
    assert "not compared, without a speed in one of the runs (1): aes-128-gcm encrypt on " in text


def test_rows_are_keyed_by_engine_too():
    before = _run(_row("software", 100.0), _row("caam", 50.0))
    after = _run(_row("caam", 60.0), _row("software", 100.0))
    changes = compare.compare(before, after)
    assert [(c["engine"], c["before"], c["after"]) for c in changes] == [
        ("caam", 50.0, 60.0),
        ("software", 100.0, 100.0),
    ]


# -- the command ------------------------------------------------------------------------------


def _save(tmp_path, name: str, *rows: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(_run(*rows)))
    return str(path)


def test_compare_lists_rows_in_one_run_only(capsys, tmp_path):
    a = _save(tmp_path, "a.json", _row(trials=TIGHT), _row(algorithm="sha256", operation="d"))
    b = _save(tmp_path, "b.json", _row(trials=TIGHT), _row(algorithm="sha384", operation="d"))
    assert cli.main(["compare", a, b]) == 0
    out = capsys.readouterr().out
    assert f"only in {a} (1): sha256 d on software at 16 KiB" in out.replace("\n", "")
    assert f"only in {b} (1): sha384 d on software at 16 KiB" in out.replace("\n", "")


def test_compare_json_keeps_its_list_and_lists_leftovers_on_stderr(capsys, tmp_path):
    a = _save(tmp_path, "a.json", _row(trials=TIGHT), _row(algorithm="sha256", operation="d"))
    b = _save(tmp_path, "b.json", _row(trials=TIGHT))
    assert cli.main(["compare", a, b, "--json"]) == 0
    out, err = capsys.readouterr()
    (change,) = json.loads(out)
    assert change["verdict"] == "within noise" and change["beyond_noise"] is False
    assert f"cryptoffload compare: not compared, only in {a} (1): sha256 d on software" in err


def test_compare_without_rows_in_common_exits_2_and_says_why(capsys, tmp_path):
    a = _save(tmp_path, "a.json", _row(algorithm="sha256", operation="digest"))
    b = _save(tmp_path, "b.json", _row(algorithm="sha384", operation="digest"))
    code = cli.main(["compare", a, b])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert f"cryptoffload compare: {a} and {b} have no rows in common" in err
    assert f"only in {a} (1): sha256 digest on software at 16 KiB" in err
    assert f"only in {b} (1): sha384 digest on software at 16 KiB" in err


def test_compare_of_empty_runs_exits_2(capsys, tmp_path):
    a, b = _save(tmp_path, "a.json"), _save(tmp_path, "b.json")
    assert cli.main(["compare", a, b]) == 2
    assert "has 0 rows" in capsys.readouterr().err


def test_compare_help_documents_the_test():
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    text = sub.choices["compare"].format_help()
    assert "Mann-Whitney U" in text and "95% confidence" in text and "listed" in text


@pytest.mark.parametrize(
    "trials, median",
    [
        ([99.0, float("nan"), 101.0], 100.0),
        ([99.0, float("inf"), 101.0], 100.0),
        ([99.0, -134768.6, 101.0], 100.0),
        ([], 100.0),
        (TIGHT, float("nan")),
        (TIGHT, -100.0),
    ],
)
def test_compare_refuses_nan_infinite_negative_or_empty_trials_naming_file_and_row(
    capsys, tmp_path, trials, median
):
    good = _save(tmp_path, "good.json", _row(trials=TIGHT))
    bad = _save(tmp_path, "bad.json", _row(trials=TIGHT), _row(median=median, trials=trials))
    assert cli.main(["compare", good, bad, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "bad.json" in err and "rows[1]" in err


def test_compare_json_never_writes_bare_nan(capsys, tmp_path, monkeypatch):
    a = _save(tmp_path, "a.json", _row(trials=TIGHT))
    b = _save(tmp_path, "b.json", _row(trials=TIGHT))
    nan_change = {"change": float("nan"), "verdict": "within noise"}
    monkeypatch.setattr(compare, "compare", lambda before, after: [nan_change])
    code = cli.main(["compare", a, b, "--json"])
    out, _ = capsys.readouterr()
    assert "NaN" not in out and code == 2
