"""Issue 22 (points 1, 2, 3, 7, 8): `bench` and `sweep` check what they are given before
measuring, keep what they measured when writing fails, and say what a software-only run is."""

from __future__ import annotations

import pytest
from cli_calls import refused, run_cli

from cryptoffload.tools import cli

TINY = ("--time", "0.01", "--trials", "1", "--quiet")


# -- 7: --trials and --time are bounded ---------------------------------------------------------


@pytest.mark.parametrize("command", ["bench", "sweep"])
@pytest.mark.parametrize(
    ("option", "value", "limit"),
    [
        ("--trials", "99999999999999999999", "at most 1000 trials"),
        ("--trials", "1001", "at most 1000 trials"),
        ("--time", "1e308", "at most 60 seconds per trial"),
        ("--time", "61", "at most 60 seconds per trial"),
    ],
)
def test_trials_and_time_above_their_limit_exit_2_naming_the_limit(
    capsys, command, option, value, limit
):
    err = refused(capsys, command, "--algs", "sha256", "--quiet", f"{option}={value}")
    assert f"argument {option}" in err and limit in err and repr(value) in err


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_help_documents_the_limits_of_trials_and_time(capsys, command):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "at most 1000" in out and "at most 60" in out


# -- 8: contradictions and duplicates are usage errors ----------------------------------------


def test_embedded_with_another_block_is_a_usage_error_naming_both(capsys):
    code, out, err = run_cli(
        capsys, "bench", "--algs", "sha256", *TINY, "--embedded", "--block", "64k"
    )
    assert code == 2 and out == ""
    assert "--embedded" in err and "--block 65536" in err


def test_sweep_duplicate_sizes_exit_2_naming_the_duplicate(capsys):
    err = refused(capsys, "sweep", "--algs", "sha256", *TINY, "--sizes", "64,1k,64")
    assert "argument --sizes" in err and "64 bytes given more than once" in err
    err = refused(capsys, "sweep", "--algs", "sha256", *TINY, "--sizes", "1k,1024")
    assert "1024 bytes given more than once" in err


@pytest.mark.parametrize("form", [("--block", "-1k"), ("--block=-1k",), ("--block", "-4")])
def test_negative_block_says_the_size_must_be_positive(capsys, form):
    err = refused(capsys, "bench", "--algs", "sha256", *TINY, *form)
    assert "argument --block" in err and "block size must be positive" in err
    assert "expected one argument" not in err


def test_negative_sweep_size_says_the_size_must_be_positive(capsys):
    err = refused(capsys, "sweep", "--algs", "sha256", *TINY, "--sizes", "-1k,64")
    assert "argument --sizes" in err and "block size must be positive" in err


# -- 1 and 2: output paths and the plot format are checked before measuring ---------------------


@pytest.fixture
def no_measuring(monkeypatch):
    """Fail the test if anything is measured."""
    from cryptoffload.tools.bench import runner, sweep

    def measured(*args, **kwargs):
        raise AssertionError("measured before checking the output paths")

    monkeypatch.setattr(runner, "run", measured)
    monkeypatch.setattr(sweep, "run", measured)


BENCH = ("bench", "--engines", "software", "--algs", "sha256", *TINY)
SWEEP = ("sweep", "--engines", "software", "--algs", "sha256", "--sizes", "64,128", *TINY)


@pytest.mark.parametrize("fmt", ["table", "json", "md", "csv"])
def test_bench_out_in_a_missing_directory_exits_2_before_measuring(
    capsys, tmp_path, no_measuring, fmt
):
    path = tmp_path / "nonexistent" / "x.json"
    code, out, err = run_cli(capsys, *BENCH, "--format", fmt, "--out", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--out" in err and "does not exist" in err


def test_sweep_out_in_a_missing_directory_exits_2_before_measuring(capsys, tmp_path, no_measuring):
    code, _, err = run_cli(capsys, *SWEEP, "--out", str(tmp_path / "no" / "x.json"))
    assert code == 2 and "--out" in err and "does not exist" in err


def test_sweep_plot_in_a_missing_directory_exits_2_before_measuring(capsys, tmp_path, no_measuring):
    code, _, err = run_cli(capsys, *SWEEP, "--plot", str(tmp_path / "no" / "x.png"))
    assert code == 2 and "--plot" in err and "does not exist" in err


def test_sweep_plot_of_a_format_matplotlib_cannot_write_exits_2_before_measuring(
    capsys, tmp_path, no_measuring
):
    code, _, err = run_cli(capsys, *SWEEP, "--plot", str(tmp_path / "out.txt"))
    assert code == 2 and err.count("\n") == 1
    assert "cannot write .txt" in err and ".png" in err and ".svg" in err
    assert not (tmp_path / "out.txt").exists()


def test_sweep_plot_naming_a_directory_exits_2_saying_it_is_a_directory(
    capsys, tmp_path, no_measuring
):
    adir = tmp_path / "adir"
    adir.mkdir()
    code, _, err = run_cli(capsys, *SWEEP, "--plot", str(adir))
    assert code == 2 and "is a directory" in err and "--plot" in err
    assert not (tmp_path / "adir.png").exists() and list(adir.iterdir()) == []


def test_sweep_plot_without_extension_is_a_png_at_exactly_that_path(capsys, tmp_path):
    path = tmp_path / "plotfile"
    code, out, _ = run_cli(capsys, *SWEEP, "--plot", str(path))
    assert code == 0 and f"plot written to {path}" in out
    assert path.read_bytes().startswith(b"\x89PNG") and not (tmp_path / "plotfile.png").exists()


def test_sweep_plot_in_svg_is_written(capsys, tmp_path):
    path = tmp_path / "sweep.svg"
    code, _, _ = run_cli(capsys, *SWEEP, "--plot", str(path))
    assert code == 0 and b"<svg" in path.read_bytes()


def _remove_after(monkeypatch, module, directory):
    """Measure, then take ``directory`` away: writing then fails after measuring."""
    real = module.run

    def run(*args, **kwargs):
        result = real(*args, **kwargs)
        directory.rmdir()
        return result

    monkeypatch.setattr(module, "run", run)


def test_bench_table_still_prints_when_out_fails_after_measuring(capsys, tmp_path, monkeypatch):
    from cryptoffload.tools.bench import runner

    directory = tmp_path / "gone"
    directory.mkdir()
    _remove_after(monkeypatch, runner, directory)
    code, out, err = run_cli(capsys, *BENCH, "--out", str(directory / "x.json"))
    assert code == 1
    assert "sha256 digest" in out and "software" in out
    assert "--out" in err and "the table is above" in err


def test_bench_md_goes_to_stdout_when_out_fails_after_measuring(capsys, tmp_path, monkeypatch):
    from cryptoffload.tools.bench import runner

    directory = tmp_path / "gone"
    directory.mkdir()
    _remove_after(monkeypatch, runner, directory)
    code, out, err = run_cli(capsys, *BENCH, "--format", "md", "--out", str(directory / "x.md"))
    assert code == 1 and "| sha256 digest | software |" in out and "--out" in err


def test_sweep_table_still_prints_when_plot_fails_after_measuring(capsys, tmp_path, monkeypatch):
    from cryptoffload.tools.bench import sweep

    directory = tmp_path / "gone"
    directory.mkdir()
    _remove_after(monkeypatch, sweep, directory)
    code, out, err = run_cli(capsys, *SWEEP, "--plot", str(directory / "x.png"))
    assert code == 1
    assert "sha256" in out and "plot written" not in out
    assert "--plot" in err and "not written" in err


# -- 3: a run with software alone says which engines were looked for, and why each is absent ----


@pytest.fixture
def nothing_found(monkeypatch):
    """A machine where the engines looked for (here one, ``absent``) are not available."""
    from doubles import AbsentEngine

    from cryptoffload.core.provider import Provider
    from cryptoffload.tools.bench import cli as bench_cli

    provider = Provider([AbsentEngine()])
    monkeypatch.setattr(bench_cli, "default_provider", lambda: provider)


ALONE = ("bench", "--algs", "sha256", *TINY)
ABSENT_REASON = "no /dev/absent on this machine"


def test_bench_json_machine_says_which_engines_were_looked_for_and_why_absent(
    capsys, nothing_found
):
    import json

    code, out, _ = run_cli(capsys, *ALONE, "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert data["machine"]["engines_looked_for"] == [
        {"name": "absent", "available": False, "reason": ABSENT_REASON}
    ]
    (row,) = data["rows"]
    assert {"speedup", "median", "trials", "offloaded", "engine"} <= set(row)


def test_bench_table_footer_names_the_engines_looked_for_and_drops_speedup(capsys, nothing_found):
    code, out, _ = run_cli(capsys, *ALONE)
    assert code == 0
    assert "speedup" not in out.split("only software")[0]
    assert "only software was measured: the speedup column is left out" in out
    assert "engines looked for: absent; none available" in out
    assert f"absent: not available: {ABSENT_REASON}" in out


def test_bench_md_footer_names_the_engines_looked_for_and_drops_speedup(capsys, nothing_found):
    code, out, _ = run_cli(capsys, *ALONE, "--format", "md")
    head = out.splitlines()[0]
    assert code == 0 and "speedup" not in head and head.count("|") == 6
    assert "- only software was measured: the speedup column is left out" in out
    assert f"- absent: not available: {ABSENT_REASON}" in out


def test_bench_with_an_engine_measured_keeps_the_speedup_column(capsys, monkeypatch):
    from doubles import TakeAllEngine

    import cryptoffload.engines

    monkeypatch.setitem(cryptoffload.engines.FACTORIES, "takeall", lambda arg: TakeAllEngine())
    code, out, _ = run_cli(capsys, *ALONE, "--engines", "takeall", "--format", "md")
    assert code == 0 and "speedup" in out.splitlines()[0]
    assert "only software was measured" not in out


# -- issue 30, point 12: a size that cannot be allocated is refused before measuring -----------

SIZE_OPTIONS = [("sweep", "--sizes"), ("bench", "--block")]


@pytest.mark.parametrize(("command", "option"), SIZE_OPTIONS)
def test_a_size_no_machine_can_allocate_exits_2_before_measuring(capsys, command, option):
    err = refused(capsys, command, "--engines", "software", "--algs", "sha256", *TINY,
                  option, str(1 << 60))  # fmt: skip
    assert f"argument {option}" in err and f"block size {1 << 60} bytes (1073741824.0 GiB)" in err
    assert "cannot be allocated here" in err


@pytest.mark.parametrize(("command", "option"), SIZE_OPTIONS)
def test_the_memory_available_sets_the_largest_size_and_the_message_says_it(
    capsys, monkeypatch, command, option
):
    from cryptoffload.tools.bench import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 12 << 30)
    err = refused(capsys, command, "--algs", "sha256", *TINY, option, "99999999999")
    assert "block size 99999999999 bytes (93.1 GiB) cannot be allocated here" in err
    assert "12.0 GiB of memory available" in err and f"at most {4 << 30} bytes" in err


def test_a_size_that_fits_the_memory_available_is_taken(monkeypatch):
    from cryptoffload.tools.bench import cli as bench_cli
    from cryptoffload.tools.bench import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 12 << 30)
    assert bench_cli._block_sizes(f"64,{4 << 30}") == [64, 4 << 30]
    monkeypatch.setattr(memory, "available_bytes", lambda: None)  # not known here: not checked
    assert bench_cli._block_sizes(str(1 << 40)) == [1 << 40]
