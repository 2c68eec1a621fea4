"""A named engine that is not available: its own rows say so, never a second software row.

The double is ``AbsentEngine`` (its probe says no); the real AF_ALG engine is used too where
this machine has no AF_ALG, skipped where it has (its own probe says which).
"""

from __future__ import annotations

import json

import pytest
from bench_rows import suptitle
from doubles import AbsentEngine, TakeAllEngine

import cryptoffload.engines
from cryptoffload.engines.afalg import AfalgEngine
from cryptoffload.tools import cli
from cryptoffload.tools.bench import cases, runner, sweep, tls13

TINY = ("--time", "0.01", "--trials", "1", "--quiet")
ABSENT_REASON = "no /dev/absent on this machine"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def absent(monkeypatch):
    monkeypatch.setitem(cryptoffload.engines.FACTORIES, "absent", lambda arg: AbsentEngine())


@pytest.fixture
def takeall(monkeypatch):
    monkeypatch.setitem(cryptoffload.engines.FACTORIES, "takeall", lambda arg: TakeAllEngine())


# -- runner -----------------------------------------------------------------------------------


def test_unavailable_engine_row_names_the_engine_and_its_reason_without_a_speed():
    out = runner.run(cases.select(["sha256 digest"]), [AbsentEngine()], 1024, 0.01, trials=1)
    assert out["settings"]["engines"] == ["software", "absent"]
    software, absent_row = out["rows"]
    assert software["engine"] == "software" and software["median"] is not None
    assert absent_row["engine"] == "absent"
    assert absent_row["median"] is None and absent_row["trials"] == []
    assert absent_row["speedup"] is None and absent_row["offloaded"] is False
    assert absent_row["note"] == f"not available: {ABSENT_REASON}"
    assert absent_row["unavailable"] == ABSENT_REASON


def test_unavailable_engine_row_is_not_measured_at_all():
    seen: list[str] = []
    runner.run(
        cases.select(["sha256 digest"]), [AbsentEngine()], 1024, 0.01, 1, progress=seen.append
    )
    assert seen == ["sha256 digest [software]", "sha256 digest [absent]"]


def test_engine_named_twice_is_refused():
    with pytest.raises(ValueError, match="engine 'takeall' is named twice"):
        runner.row_providers([TakeAllEngine(), TakeAllEngine()], None)


def test_sweep_draws_no_crossover_for_an_unavailable_engine():
    out = sweep.run(cases.select(["sha256 digest"]), [AbsentEngine()], [64, 1024], 0.01, 1)
    assert out["settings"]["engines"] == ["software", "absent"]
    assert out["crossovers"] == []
    absent_rows = [r for r in out["rows"] if r["engine"] == "absent"]
    assert [r["block"] for r in absent_rows] == [64, 1024]
    assert all(r["median"] is None and r["unavailable"] == ABSENT_REASON for r in absent_rows)


def test_tls13_unavailable_engine_entry_has_its_reason_and_no_figures():
    out = tls13.run([AbsentEngine()], 0.01, 1)
    software, absent_entry = out["engines"]
    assert software["engine"] == "software" and software["handshakes_per_s"]
    assert absent_entry["engine"] == "absent"
    assert absent_entry["unavailable"] == ABSENT_REASON
    assert absent_entry["handshakes_per_s"] == {} and absent_entry["records_mib_per_s"] == {}


# -- bench and sweep commands -----------------------------------------------------------------


def test_bench_software_and_unavailable_engine_saves_both_names_and_says_why(capsys, absent):
    code, out, _ = run_cli(
        capsys, "bench", "--engines", "software,absent", "--algs", "sha256", *TINY,
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["settings"]["engines"] == ["software", "absent"]
    assert [r["engine"] for r in data["rows"]] == ["software", "absent"]
    assert data["rows"][1]["median"] is None
    assert data["rows"][1]["note"] == f"not available: {ABSENT_REASON}"


def test_bench_table_marks_the_unavailable_row_and_prints_the_reason(capsys, absent):
    code, out, _ = run_cli(
        capsys, "bench", "--engines", "software,absent", "--algs", "sha256", *TINY
    )
    assert code == 0
    (row,) = [line for line in out.splitlines() if "│ absent" in line]
    assert "not available" in row and "MiB/s" not in row and "x" not in row.split("│")[-2]
    assert f"absent: not available: {ABSENT_REASON}" in out
    assert out.count("│ software") == 1


def test_bench_md_marks_the_unavailable_row_and_prints_the_reason(capsys, absent):
    code, out, _ = run_cli(
        capsys, "bench", "--engines", "software,absent", "--algs", "sha256", *TINY,
        "--format", "md",
    )  # fmt: skip
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith("| sha256 digest | absent")]
    assert "not available" in row and "MiB/s" not in row
    assert f"absent: not available: {ABSENT_REASON}" in out


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_only_unavailable_engines_named_stops_with_exit_2(capsys, absent, command):
    code, out, err = run_cli(capsys, command, "--engines", "absent", "--algs", "sha256", *TINY)
    assert code == 2 and out == ""
    assert f"cryptoffload {command}: nothing to measure" in err
    assert f"absent is not available: {ABSENT_REASON}" in err
    assert "--engines software,absent" in err


def test_bench_tls13_with_only_unavailable_engines_stops_with_exit_2(capsys, absent):
    code, _, err = run_cli(capsys, "bench", "--workload", "tls13", "--engines", "absent", *TINY)
    assert code == 2 and "nothing to measure" in err


def test_bench_tls13_table_says_the_engine_is_not_available(capsys, absent):
    code, out, _ = run_cli(
        capsys, "bench", "--workload", "tls13", "--engines", "software,absent", *TINY
    )
    assert code == 0
    assert f"absent: not available: {ABSENT_REASON}" in out


def test_sweep_with_an_unavailable_engine_prints_no_crossover_and_no_ratio_title(capsys, absent):
    code, out, _ = run_cli(
        capsys, "sweep", "--engines", "software,absent", "--sizes", "64,1k", "--algs", "sha256",
        *TINY,
    )  # fmt: skip
    assert code == 0
    assert "offload pays" not in out and "software faster" not in out
    assert "engine/software" not in out and "no engine measured" in out
    assert f"absent: not available: {ABSENT_REASON}" in out


def test_sweep_plot_of_software_and_unavailable_engine_draws_one_curve(capsys, absent, tmp_path):
    from cryptoffload.tools.bench.plot import sweep_figure

    code, out, _ = run_cli(
        capsys, "sweep", "--engines", "software,absent", "--sizes", "64,1k", "--algs", "sha256",
        *TINY, "--format", "json",
    )  # fmt: skip
    assert code == 0
    fig = sweep_figure(json.loads(out))
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert [line.get_label() for line in ax.get_lines()] == ["software"]
    assert "no engine measured" in suptitle(fig)
    assert "cross" not in suptitle(fig)


def test_engine_named_twice_on_the_command_line_exits_2(capsys, takeall):
    code, _, err = run_cli(
        capsys, "bench", "--engines", "takeall,takeall", "--algs", "sha256", *TINY
    )
    assert code == 2 and "engine 'takeall' is named twice" in err


# -- the real AF_ALG engine, where this machine has none ---------------------------------------

_AFALG = AfalgEngine().probe()
needs_no_afalg = pytest.mark.skipif(
    _AFALG.available, reason="this machine has AF_ALG: the engine is available"
)


@needs_no_afalg
def test_bench_software_and_afalg_without_afalg_gives_one_software_row(capsys):
    code, out, _ = run_cli(
        capsys, "bench", "--engines", "software,afalg", "--algs", "sha256", *TINY,
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["settings"]["engines"] == ["software", "afalg"]
    software, afalg = data["rows"]
    assert software["engine"] == "software" and afalg["engine"] == "afalg"
    assert afalg["median"] is None
    assert afalg["note"] == f"not available: {_AFALG.reason}"


@needs_no_afalg
def test_sweep_afalg_alone_without_afalg_exits_2_and_draws_nothing(capsys, tmp_path):
    path = tmp_path / "s.png"
    code, out, err = run_cli(
        capsys, "sweep", "--engines", "afalg", "--sizes", "64,1024", "--algs", "sha256", *TINY,
        "--plot", str(path),
    )  # fmt: skip
    assert code == 2 and out == ""
    assert "afalg is not available" in err and "offload pays" not in err
    assert not path.exists()
