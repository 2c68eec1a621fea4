"""Issue 22 (points 1, 2, 3, 7, 8): `bench` and `sweep` check what they are given before
measuring, keep what they measured when writing fails, and say what a software-only run is."""

from __future__ import annotations

import pytest

from cryptoffload.tools import cli

TINY = ("--time", "0.01", "--trials", "1", "--quiet")


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv: str) -> str:
    """The stderr of a command line argparse refuses (exit status 2)."""
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err


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
