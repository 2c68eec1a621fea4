"""Issue 22.13: Ctrl-C (KeyboardInterrupt) during bench or verify: one line, "interrupted", exit
status 130, no traceback; bench prints the rows measured before it first."""

from __future__ import annotations

import pytest

from cryptoffload.tools import cli, verify
from cryptoffload.tools.bench import runner

TINY = ("--time", "0.01", "--trials", "1", "--quiet")


def _main(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except KeyboardInterrupt:  # pragma: no cover - the failure this test guards against
        pytest.fail("KeyboardInterrupt escaped cryptoffload's main()")
    out, err = capsys.readouterr()
    return code, out, err


def _interrupt_after(monkeypatch, measured: int) -> None:
    """The measuring function raises KeyboardInterrupt once ``measured`` rows are done."""
    real = runner.measure_row
    calls = []

    def measure_row(*args, **kwargs):
        if len(calls) == measured:
            raise KeyboardInterrupt
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "measure_row", measure_row)


def test_bench_interrupted_prints_rows_measured_so_far_then_one_line_and_exits_130(
    monkeypatch, capsys
):
    _interrupt_after(monkeypatch, 1)
    code, out, err = _main(
        capsys, "bench", "--engines", "software", "--algs", "sha256,sha512", *TINY
    )
    assert code == 130
    assert err == "cryptoffload bench: interrupted\n"
    assert "sha256" in out and "sha512" not in out
    assert "Traceback" not in out + err


def test_bench_interrupted_during_the_second_case_keeps_the_first_cases_rows(monkeypatch, capsys):
    _interrupt_after(monkeypatch, 2)
    code, out, err = _main(
        capsys, "bench", "--engines", "software", "--algs", "sha256,sha384,sha512", *TINY
    )
    assert code == 130 and err == "cryptoffload bench: interrupted\n"
    assert "sha256" in out and "sha384" in out and "sha512" not in out


def test_bench_interrupted_before_any_row_prints_only_the_line(monkeypatch, capsys):
    _interrupt_after(monkeypatch, 0)
    code, out, err = _main(capsys, "bench", "--engines", "software", "--algs", "sha256", *TINY)
    assert code == 130 and err == "cryptoffload bench: interrupted\n" and out == ""


def test_bench_interrupted_writes_no_partial_out_file(monkeypatch, capsys, tmp_path):
    _interrupt_after(monkeypatch, 1)
    path = tmp_path / "run.json"
    code, out, _ = _main(
        capsys, "bench", "--engines", "software", "--algs", "sha256,sha512", *TINY,
        "--out", str(path),
    )  # fmt: skip
    assert code == 130 and "sha256" in out and not path.exists()


def test_runner_interrupted_carries_the_report_of_rows_measured(monkeypatch):
    from cryptoffload.tools.bench import cases

    _interrupt_after(monkeypatch, 1)
    with pytest.raises(runner.Interrupted) as info:
        runner.run(cases.select(["sha256", "sha512"]), [], 1024, 0.01, 1)
    assert isinstance(info.value, KeyboardInterrupt)
    assert [r["algorithm"] for r in info.value.result["rows"]] == ["sha256"]


def test_verify_interrupted_prints_one_line_and_exits_130(monkeypatch, capsys):
    def run(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(verify, "run", run)
    code, out, err = _main(
        capsys, "verify", "--engines", "caam:model=t2080", "--algs", "sha256", "--quiet"
    )
    assert code == 130
    assert err == "cryptoffload verify: interrupted\n" and out == ""
