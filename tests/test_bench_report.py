"""Benchmark reports, comparisons, crossovers and plots, on hand-built (synthetic) results."""

from __future__ import annotations

import copy
import csv
import io
import json
import math

import pytest
from bench_rows import MACHINE, bench_row
from rich.console import Console

from cryptoffload.tools.bench import report, sweep
from cryptoffload.tools.bench.plot import plot_sweep

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def synthetic_report(with_cpu: bool = False) -> dict:
    rows = [
        bench_row("software", 1000.0, speedup=1.0),
        bench_row("caam", 250.0, speedup=0.25, offload_share=0.5, noisy=True, spread=0.3),
        bench_row(
            "decliner",
            None,
            note="not offloaded (unsupported x7)",
            declined={"unsupported": 7},
            fallback_median=900.0,
        ),
        bench_row(
            "software",
            2500.0,
            algorithm="ecdsa-p256-sign",
            operation="sign",
            block=None,
            unit="ops/s",
            speedup=1.0,
        ),
    ]
    if with_cpu:
        for r in rows:
            if r["median"] is not None:
                r["cpu"] = {
                    "wall": 1.0,
                    "user": 0.9,
                    "sys": 0.05,
                    "cpu_share": 0.95,
                    "reading": "core busy",
                }
    return {
        "machine": MACHINE,
        "settings": {
            "block": 16384,
            "time": 0.25,
            "trials": 3,
            "cpu": with_cpu,
            "harness_ns_per_call": 50.0,
        },
        "rows": rows,
    }


# -- render: md, csv, json --------------------------------------------------------------------


def test_markdown_has_header_separator_and_one_line_perbench_row():
    rep = synthetic_report()
    text = report.render(rep, "md")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| algorithm | engine | block | result | spread | speedup |"
    assert table[1] == "|---|---|---|---|---|---|"
    assert len(table) == 2 + len(rep["rows"])
    for line in table:
        assert line.count("|") == 7
    assert "Machine: Test CPU, Linux 6.1, OpenSSL 3.0.0, Python 3.11.7." in text


def test_markdown_rows_show_figures_sizes_and_reasons():
    lines = report.render(synthetic_report(), "md").splitlines()[2:6]
    software, engine, decliner, pk = lines
    assert "aes-128-gcm encrypt" in software and "16 KiB" in software
    assert "1,000.00 MiB/s" in software and "1.00x" in software
    assert "250.00 MiB/s (50% offloaded)" in engine and "noisy" in engine and "0.25x" in engine
    assert "not offloaded (unsupported x7)" in decliner and "MiB/s" not in decliner
    assert "ecdsa-p256-sign sign" in pk and "2,500.00 ops/s" in pk and "| - |" in pk


def test_markdown_with_cpu_adds_cpu_columns():
    text = report.render(synthetic_report(with_cpu=True), "md")
    header = text.splitlines()[0]
    assert header.endswith("| real/user/sys s | cpu | reading |")
    software = text.splitlines()[2]
    assert "1.00/0.90/0.05" in software and "95%" in software and "core busy" in software


def test_csv_parses_and_has_the_fields():
    rep = synthetic_report()
    rows = list(csv.DictReader(io.StringIO(report.render(rep, "csv"))))
    assert len(rows) == len(rep["rows"])
    fields = set(rows[0])
    for field in ("algorithm", "operation", "engine", "block", "unit", "median", "spread"):
        assert field in fields
    for field in ("noisy", "offloaded", "offload_share", "speedup", "note", "trials"):
        assert field in fields
    assert "reading" not in fields
    software, _, decliner, pk = rows
    assert software["median"] == "1000.0" and software["unit"] == "MiB/s"
    assert software["block"] == "16384"
    assert [float(t) for t in software["trials"].split()] == rep["rows"][0]["trials"]
    assert decliner["median"] == "" and decliner["note"] == "not offloaded (unsupported x7)"
    assert pk["block"] == "" and pk["unit"] == "ops/s"


def test_csv_with_cpu_flattens_cpu_fields():
    rows = list(csv.DictReader(io.StringIO(report.render(synthetic_report(True), "csv"))))
    assert {"wall", "user", "sys", "cpu_share", "reading"} <= set(rows[0])
    assert rows[0]["reading"] == "core busy" and rows[0]["cpu_share"] == "0.95"
    assert rows[2]["reading"] == ""  # the decliner row had no cpu numbers


def test_json_round_trips():
    rep = synthetic_report(with_cpu=True)
    assert json.loads(report.render(rep, "json")) == rep


def test_print_table_shows_rows_machine_and_busy_warning():
    rep = synthetic_report(with_cpu=True)
    rep["rows"][0]["cpu"]["cpu_share"] = 0.4
    console = Console(record=True, width=240)
    report.print_table(rep, console)
    text = console.export_text()
    assert "not offloaded (unsupported x7)" in text
    assert "(50% offloaded)" in text
    assert "Test CPU (2 cores, x86_64)" in text
    assert "40% of a core" in text


# -- sweep crossover on synthetic curves ------------------------------------------------------


def test_crossover_crosses_between_two_sizes_log_log():
    points = [(64, 0.5), (256, 0.8), (1024, 2.0), (16384, 4.0)]
    c = sweep.crossover(points)
    assert c["kind"] == "crosses"
    assert 256 < c["size"] < 1024
    # in log(size) and log(ratio), ratio 1 lies ln(1/0.8)/ln(2.0/0.8) of the way from 256 to 1024
    t = math.log(1 / 0.8) / math.log(2.0 / 0.8)
    assert c["size"] == round(math.exp(math.log(256) + t * math.log(1024 / 256)))
    assert c["size"] == round(256 * 4**t)


def test_crossover_midpoint_in_log_space_is_geometric_mean():
    c = sweep.crossover([(100, 0.5), (10000, 2.0)])
    assert c == {"size": 1000, "kind": "crosses"}


def test_crossover_ratio_exactly_one_counts_as_paying():
    assert sweep.crossover([(64, 0.5), (256, 1.0), (1024, 1.5)]) == {
        "size": 256,
        "kind": "crosses",
    }


def test_crossover_always_when_faster_at_every_size():
    assert sweep.crossover([(256, 1.2), (64, 1.0), (1024, 3.0)]) == {"size": 64, "kind": "always"}


def test_crossover_never_when_slower_at_every_size():
    assert sweep.crossover([(64, 0.1), (1024, 0.5), (16384, 0.99)]) == {
        "size": None,
        "kind": "never",
    }


def test_crossover_falls_when_faster_only_below_a_size():
    c = sweep.crossover([(64, 2.0), (1024, 0.5)])
    assert c["kind"] == "falls"
    assert 64 < c["size"] < 1024
    t = math.log(2.0) / math.log(2.0 / 0.5)
    assert c["size"] == round(math.exp(math.log(64) + t * math.log(1024 / 64)))


@pytest.mark.parametrize(
    "points",
    [[], [(64, None), (1024, None)], [(0, 2.0)], [(-64, 0.5)]],
    ids=["empty", "all-none", "zero-size", "negative-size"],
)
def test_crossover_no_data(points):
    assert sweep.crossover(points) == {"size": None, "kind": "no data"}


def test_crossover_ignores_missing_ratios():
    assert sweep.crossover([(64, 0.5), (256, None), (1024, 2.0)]) == sweep.crossover(
        [(64, 0.5), (1024, 2.0)]
    )


def test_crossover_sorts_unsorted_points():
    points = [(16384, 4.0), (256, 0.8), (1024, 2.0), (64, 0.5)]
    assert sweep.crossover(points) == sweep.crossover(sorted(points))
    assert sweep.crossover(points)["kind"] == "crosses"


def test_crossover_takes_the_first_sign_change():
    c = sweep.crossover([(64, 0.5), (256, 2.0), (1024, 0.5), (4096, 2.0)])
    assert c["kind"] == "crosses"
    assert 64 < c["size"] < 256


# -- sweep output and plot --------------------------------------------------------------------


def synthetic_sweep() -> dict:
    sizes = [64, 256, 1400, 16384]
    soft = {64: 100.0, 256: 300.0, 1400: 800.0, 16384: 1500.0}
    engine = {64: 20.0, 256: 150.0, 1400: 1200.0, 16384: 3000.0}
    rows = []
    for size in sizes:
        rows.append(bench_row("software", soft[size], block=size, speedup=1.0))
        rows.append(bench_row("caam", engine[size], block=size, speedup=engine[size] / soft[size]))
        rows.append(
            bench_row(
                "decliner",
                None,
                block=size,
                note="not offloaded (unsupported x2)",
            )
        )
    points = [(r["block"], r["speedup"]) for r in rows if r["engine"] == "caam"]
    crossovers = [
        {"algorithm": "aes-128-gcm", "operation": "encrypt", "engine": "caam"}
        | sweep.crossover(points),
        {"algorithm": "aes-128-gcm", "operation": "encrypt", "engine": "decliner"}
        | sweep.crossover([]),
    ]
    return {
        "settings": {"sizes": sizes, "time": 0.2, "trials": 3},
        "rows": rows,
        "crossovers": crossovers,
    }


def test_synthetic_sweep_crosses_between_256_and_1400():
    (c, none) = synthetic_sweep()["crossovers"]
    assert c["kind"] == "crosses" and 256 < c["size"] < 1400
    assert none["kind"] == "no data"


def test_sweep_markdown_has_a_line_per_engine_and_the_crossovers():
    result = synthetic_sweep()
    text = report.sweep_markdown(result)
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| algorithm | engine | 64 B | 256 B | 1400 B | 16 KiB |"
    assert len(table) == 2 + 3
    size = result["crossovers"][0]["size"]
    assert f"- aes-128-gcm encrypt on caam: offload pays from ~{size} B" in text
    assert "- aes-128-gcm encrypt on decliner: no data" in text


def test_plot_sweep_writes_a_png(tmp_path):
    path = tmp_path / "sweep.png"
    plot_sweep(synthetic_sweep(), str(path))
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 10_000


def test_plot_sweep_with_several_algorithms_writes_a_png(tmp_path):
    result = synthetic_sweep()
    more = copy.deepcopy(result["rows"])
    for r in more:
        r["algorithm"], r["operation"] = "sha256", "digest"
    result["rows"] += more
    path = tmp_path / "two.png"
    plot_sweep(result, str(path))
    assert path.read_bytes().startswith(PNG_SIGNATURE)


def test_plot_sweep_without_bulk_rows_raises(tmp_path):
    result = {
        "settings": {"sizes": [64]},
        "rows": [bench_row("software", 2500.0, algorithm="rsa-2048-private", block=None)],
        "crossovers": [],
    }
    path = tmp_path / "none.png"
    with pytest.raises(ValueError, match="no bulk rows"):
        plot_sweep(result, str(path))
    assert not path.exists()
