"""The spread column shows the figure the noisy flag is computed from, in table, md and csv."""

from __future__ import annotations

import csv
import io
import re

from bench_rows import MACHINE
from rich.console import Console

from cryptoffload.tools.bench import report, timing


def _row(spread: float, trials: list[float]) -> dict:
    median, computed, noisy = timing.summarize(trials)
    assert round(computed, 4) == spread
    return {
        "algorithm": "sha256",
        "operation": "digest",
        "engine": "software",
        "block": 16384,
        "unit": "MiB/s",
        "median": median,
        "trials": trials,
        "spread": spread,
        "noisy": noisy,
        "offloaded": False,
        "offload_share": 0.0,
        "note": "",
        "speedup": 1.0,
    }


def _report() -> dict:
    # The pair: shown as ±5.3% noisy next to ±4.9% unflagged.
    noisy = _row(0.106, [94.7, 100.0, 105.3])
    quiet = _row(0.098, [95.1, 100.0, 104.9])
    return {
        "machine": MACHINE,
        "settings": {"trials": 3, "time": 0.25, "cpu": False, "harness_ns_per_call": 40.0},
        "rows": [noisy, quiet],
    }


def _spread_cells(lines: list[str], sep: str) -> list[str]:
    cells = []
    for line in lines:
        if "sha256 digest" in line:
            cells.append(line.split(sep)[5].strip())
    return cells


def test_table_spread_is_the_flagged_figure_and_the_caption_says_what_it_is():
    console = Console(record=True, width=200)
    report.print_table(_report(), console)
    text = console.export_text()
    assert _spread_cells(text.splitlines(), "│") == ["10.6% noisy", "9.8%"]
    assert "±" not in text
    assert "spread = (max-min)/median of the 3 trials" in text
    assert "over 10% it is flagged noisy" in text


def test_markdown_spread_is_the_flagged_figure_with_a_legend():
    text = report.render(_report(), "md")
    assert _spread_cells(text.splitlines(), "|") == ["10.6% noisy", "9.8%"]
    assert "Spread = (max-min)/median of the 3 trials of a row; over 10% it is flagged noisy." in (
        text
    )


def test_csv_spread_is_the_same_figure_as_the_table():
    rows = list(csv.DictReader(io.StringIO(report.render(_report(), "csv"))))
    assert [(r["spread"], r["noisy"]) for r in rows] == [("0.106", "True"), ("0.098", "False")]


def test_every_shown_spread_over_the_threshold_is_flagged_and_none_under_it():
    rows = [_row(s, [100.0 - s * 50, 100.0, 100.0 + s * 50]) for s in (0.02, 0.099, 0.11, 0.3)]
    console = Console(record=True, width=200)
    report.print_table({**_report(), "rows": rows}, console)
    for cell in _spread_cells(console.export_text().splitlines(), "│"):
        figure = float(re.match(r"([\d.]+)%", cell).group(1))
        assert cell.endswith("noisy") == (figure > timing.NOISY_SPREAD * 100), cell
