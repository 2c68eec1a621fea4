"""The sweep's crossover is estimated where the plot's curves cross (log size, log throughput);
the plot draws the trial spread as a band and keeps its labels off the curves."""

from __future__ import annotations

import math

import pytest
from bench_rows import suptitle
from rich.console import Console

from cryptoffload.tools.bench import plot, report, sweep

SIZES = [64, 256, 1400, 16384, 65536]


def _power(a: float, k: float):
    return lambda size: a * size**k


def test_crossover_of_two_power_laws_is_where_they_cross_in_log_log_space():
    # Software 10 x^0.5 and an engine 0.01 x^1.2 are straight lines on log-log axes, so the
    # plot's point-to-point lines lie on them: they cross at x = (10 / 0.01) ** (1 / 0.7).
    software, engine = _power(10.0, 0.5), _power(0.01, 1.2)
    known = (10.0 / 0.01) ** (1 / 0.7)
    assert 16384 < known < 65536
    c = sweep.crossover([(s, engine(s) / software(s)) for s in SIZES])
    assert c["kind"] == "crosses"
    assert abs(c["size"] - known) <= 1


def test_crossover_falling_power_laws_is_where_they_cross_in_log_log_space():
    software, engine = _power(0.5, 1.0), _power(20.0, 0.4)
    known = (20.0 / 0.5) ** (1 / 0.6)
    c = sweep.crossover([(s, engine(s) / software(s)) for s in SIZES])
    assert c["kind"] == "falls"
    assert abs(c["size"] - known) <= 1


def _row(engine: str, size: int, median: float | None, spread: float = 0.1, **extra) -> dict:
    row = {
        "algorithm": "aes-128-gcm",
        "operation": "encrypt",
        "engine": engine,
        "block": size,
        "unit": "MiB/s",
        "median": median,
        "trials": [] if median is None else [median * (1 - spread / 2), median, median * 1.05],
        "spread": spread,
        "noisy": False,
        "offloaded": engine != "software",
        "offload_share": 1.0 if engine != "software" else 0.0,
        "note": "",
        "speedup": None,
    }
    row.update(extra)
    return row


# Curves that bend (not power laws), crossing between 1400 B and 16 KiB: interpolating the
# ratio linearly in log size put the dashed line at ~12.8 KB, left of the drawn crossing
# (~14.7 KB), as in the plot (9.7 KB against ~12.7 KB).
SOFTWARE = {64: 180.0, 256: 520.0, 1400: 1100.0, 16384: 1600.0, 65536: 1700.0}
ENGINE = {64: 8.0, 256: 30.0, 1400: 150.0, 16384: 1750.0, 65536: 3500.0}


def synthetic_sweep(engine: dict[int, float] | None = ENGINE) -> dict:
    rows = []
    for size in SIZES:
        rows.append(_row("software", size, SOFTWARE[size], speedup=1.0))
        if engine is not None:
            rows.append(_row("caam", size, engine[size], speedup=engine[size] / SOFTWARE[size]))
    crossovers = []
    if engine is not None:
        points = [(s, engine[s] / SOFTWARE[s]) for s in SIZES]
        crossovers.append(
            {"algorithm": "aes-128-gcm", "operation": "encrypt", "engine": "caam"}
            | sweep.crossover(points)
        )
    return {"settings": {"sizes": SIZES}, "rows": rows, "crossovers": crossovers}


def _drawn_crossing(ax) -> float:
    """Where the two drawn curves cross, from the line data, in log-log space."""
    lines = {line.get_label(): line for line in ax.get_lines() if line.get_linestyle() != "--"}
    xs = [float(x) for x in lines["software"].get_xdata()]
    soft = [math.log(float(y)) for y in lines["software"].get_ydata()]
    eng = [math.log(float(y)) for y in lines["caam"].get_ydata()]
    for i in range(len(xs) - 1):
        d0, d1 = eng[i] - soft[i], eng[i + 1] - soft[i + 1]
        if d0 < 0 <= d1:
            t = -d0 / (d1 - d0)
            return math.exp(math.log(xs[i]) + t * (math.log(xs[i + 1]) - math.log(xs[i])))
    raise AssertionError("the drawn curves do not cross")


def _panel(fig):
    (ax,) = [a for a in fig.axes if a.get_visible()]
    return ax


def test_dashed_line_sits_where_the_drawn_curves_cross():
    result = synthetic_sweep()
    (c,) = result["crossovers"]
    fig = plot.sweep_figure(result)
    ax = _panel(fig)
    crossing = _drawn_crossing(ax)
    (dashed,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    x = dashed.get_xdata()[0]
    assert x == c["size"]
    assert x == pytest.approx(crossing, rel=1e-3)
    assert 1400 < x < 16384


def test_trial_spread_is_drawn_as_a_band_per_engine():
    result = synthetic_sweep()
    ax = _panel(plot.sweep_figure(result))
    bands = ax.collections
    assert len(bands) == 2  # software and caam
    for band, engine in zip(bands, ("software", "caam"), strict=True):
        ys = band.get_paths()[0].vertices[:, 1]
        rows = [r for r in result["rows"] if r["engine"] == engine]
        assert min(ys) == pytest.approx(min(min(r["trials"]) for r in rows))
        assert max(ys) == pytest.approx(max(max(r["trials"]) for r in rows))
        vertices = band.get_paths()[0].vertices.tolist()
        for r in rows:
            for y in (min(r["trials"]), max(r["trials"])):
                assert any(vx == r["block"] and math.isclose(vy, y) for vx, vy in vertices)


def test_crossover_label_is_in_a_legend_below_the_panel_off_the_curves():
    result = synthetic_sweep()
    (c,) = result["crossovers"]
    fig = plot.sweep_figure(result)
    ax = _panel(fig)
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert f"caam pays from ~{c['size']} B" in labels
    assert not any(t.get_text() for t in ax.texts)  # no annotation inside the panel
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert legend.get_window_extent(renderer).y1 <= ax.get_window_extent(renderer).y0


def test_titles_promise_ratios_only_when_an_engine_was_measured():
    measured, alone = synthetic_sweep(), synthetic_sweep(engine=None)
    assert "cross" in suptitle(plot.sweep_figure(measured))
    title = suptitle(plot.sweep_figure(alone))
    assert "no engine measured" in title and "cross" not in title and "ratio" not in title
    for result, promised in ((measured, True), (alone, False)):
        console = Console(record=True, width=200)
        report.print_sweep(result, console)
        assert ("engine/software" in console.export_text()) is promised


def test_engine_rows_without_a_speed_do_not_promise_ratios():
    result = synthetic_sweep(engine=None)
    result["rows"] += [
        _row("decliner", s, None, note="not offloaded (unsupported x2)", trials=[]) for s in SIZES
    ]
    console = Console(record=True, width=200)
    report.print_sweep(result, console)
    assert "engine/software" not in console.export_text()
    assert "no engine measured" in suptitle(plot.sweep_figure(result))


def test_a_tie_counts_as_the_engine_keeping_up_not_as_a_gap_in_the_data():
    """A ratio of exactly 1 is "as fast as software": a curve that ties at the smallest size
    and wins above it always pays; one that ties and then loses never crosses upwards."""
    assert sweep.crossover([(64, 1.0), (1024, 1.5), (16384, 2.0)]) == {
        "size": 64,
        "kind": "always",
    }
    assert sweep.crossover([(64, 1.0), (1024, 0.5)])["kind"] == "falls"
