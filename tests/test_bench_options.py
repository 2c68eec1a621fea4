"""Options of `bench`, `sweep` and `compare`: what is refused (exit 2, a message naming the option,
what was given and what is expected), and `--engine SPEC` beside `--engines LIST`."""

from __future__ import annotations

import json

import pytest
from cli_calls import refused, run_cli
from doubles import TakeAllEngine

import cryptoffload.engines
from cryptoffload.tools import cli

TINY = ("--time", "0.01", "--trials", "1", "--quiet")
GCM_TEMPLATE = "afalg:gcm_base(ctr(aes-generic),ghash-generic)"


@pytest.fixture
def takeall(monkeypatch):
    monkeypatch.setitem(cryptoffload.engines.FACTORIES, "takeall", lambda arg: TakeAllEngine())


# -- numbers and lists that cannot be measured ------------------------------------------------

BAD = [
    ("--trials", "0", "whole number of trials, 1 or more"),
    ("--trials", "-2", "whole number of trials, 1 or more"),
    ("--trials", "three", "whole number of trials, 1 or more"),
    ("--time", "-1", "seconds per trial, a number above 0"),
    ("--time", "0", "seconds per trial, a number above 0"),
    ("--time", "nan", "seconds per trial, a number above 0"),
    ("--time", "inf", "seconds per trial, a number above 0"),
    ("--algs", "", "comma-separated list of algorithm names or globs"),
    ("--algs", " , ", "comma-separated list of algorithm names or globs"),
    ("--engines", "", "comma-separated list of engine specs"),
    ("--engine", "", "an engine spec"),
]


@pytest.mark.parametrize("command", ["bench", "sweep"])
@pytest.mark.parametrize(
    ("option", "value", "expected"), BAD, ids=[f"{o}={v!r}" for o, v, _ in BAD]
)
def test_bench_and_sweep_refuse_values_that_cannot_be_measured(
    capsys, command, option, value, expected
):
    base = {"--trials": "1", "--time": "0.01"}
    argv = [command, "--algs", "sha256", "--quiet"]
    for opt, default in base.items():
        if opt != option:
            argv += [opt, default]
    err = refused(capsys, *argv, f"{option}={value}")
    assert f"argument {option}" in err
    assert expected in err
    assert repr(value) in err


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", "comma-separated list of sizes in bytes"),
        (",", "comma-separated list of sizes in bytes"),
        ("0", "block size must be positive"),
        ("64,-1", "block size must be positive"),
        ("64,huge", "block size must be one of"),
    ],
)
def test_sweep_refuses_empty_zero_and_negative_sizes(capsys, value, expected):
    err = refused(capsys, "sweep", "--algs", "sha256", f"--sizes={value}", *TINY)
    assert "argument --sizes" in err and expected in err


@pytest.mark.parametrize("value", ["0", "-4", "-1k"])
def test_bench_refuses_zero_and_negative_blocks(capsys, value):
    err = refused(capsys, "bench", "--algs", "sha256", f"--block={value}", *TINY)
    assert "argument --block" in err and "block size must" in err


# -- compare: files it cannot read, or not of its shape ----------------------------------------


@pytest.fixture
def good_run(tmp_path) -> str:
    row = {
        "algorithm": "sha256",
        "operation": "digest",
        "engine": "software",
        "block": 1024,
        "unit": "MiB/s",
        "median": 100.0,
        "trials": [99.0, 100.0, 101.0, 100.5],
    }
    path = tmp_path / "good.json"
    path.write_text(json.dumps({"machine": {}, "settings": {}, "rows": [row]}))
    return str(path)


WRONG_SHAPES = {
    "rows-int": ('{"rows": 5}', "'rows' is a number, not a list"),
    "rows-of-ints": ('{"rows": [1, 2]}', "rows[0] is a number, not an object"),
    "row-without-engine": (
        '{"rows": [{"algorithm": "sha256", "operation": "digest", "unit": "MiB/s"}]}',
        "rows[0] has 'engine' null, not text",
    ),
    "median-text": (
        '{"rows": [{"algorithm": "a", "operation": "o", "engine": "e", "unit": "u", '
        '"block": 1, "median": "fast", "trials": []}]}',
        "rows[0] has 'median' text, not a number or null",
    ),
    "trials-text": (
        '{"rows": [{"algorithm": "a", "operation": "o", "engine": "e", "unit": "u", '
        '"block": 1, "median": 1.0, "trials": "1 2 3"}]}',
        "rows[0] has 'trials' that is not a list of numbers",
    ),
    "block-text": (
        '{"rows": [{"algorithm": "a", "operation": "o", "engine": "e", "unit": "u", '
        '"block": "16k", "median": 1.0, "trials": []}]}',
        "rows[0] has 'block' text, not bytes or null",
    ),
}


@pytest.mark.parametrize("name", list(WRONG_SHAPES))
@pytest.mark.parametrize("side", ["before", "after"])
def test_compare_file_of_the_wrong_shape_exits_2_naming_file_and_shape(
    capsys, tmp_path, good_run, name, side
):
    content, problem = WRONG_SHAPES[name]
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    files = [str(bad), good_run] if side == "before" else [good_run, str(bad)]
    code, out, err = run_cli(capsys, "compare", *files)
    assert code == 2 and out == ""
    assert f"cryptoffload compare: {bad} is not a saved bench run ({problem})" in err
    assert "expected the JSON that `cryptoffload bench --format json`" in err
    assert "Traceback" not in err


def test_compare_directory_exits_2_saying_it_cannot_be_read(capsys, tmp_path, good_run):
    code, _, err = run_cli(capsys, "compare", good_run, str(tmp_path))
    assert code == 2
    assert f"cryptoffload compare: cannot read {tmp_path}: Is a directory" in err


def test_compare_missing_file_exits_2_saying_it_cannot_be_read(capsys, tmp_path, good_run):
    missing = tmp_path / "missing.json"
    code, _, err = run_cli(capsys, "compare", str(missing), good_run)
    assert code == 2
    assert f"cryptoffload compare: cannot read {missing}: No such file or directory" in err


def test_compare_binary_file_exits_2_saying_it_is_not_json(capsys, tmp_path, good_run):
    binary = tmp_path / "run.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    code, _, err = run_cli(capsys, "compare", good_run, str(binary))
    assert code == 2
    assert f"cryptoffload compare: {binary} is not JSON (not UTF-8 text)" in err


# -- --engine SPEC, repeatable, beside --engines LIST -----------------------------------------


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_engine_is_repeatable_and_adds_to_engines_in_order(command):
    args = cli.build_parser().parse_args(
        [command, "--engine", "software", "--engines", f"afalg,{GCM_TEMPLATE}", "--engine",
         GCM_TEMPLATE.replace("afalg:", "afalg:rfc4106(") + ")"]
    )  # fmt: skip
    assert args.engines == [
        "software",
        "afalg",
        GCM_TEMPLATE,
        "afalg:rfc4106(gcm_base(ctr(aes-generic),ghash-generic))",
    ]


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_engine_spec_keeps_its_commas(command):
    args = cli.build_parser().parse_args([command, "--engine", GCM_TEMPLATE])
    assert args.engines == [GCM_TEMPLATE]


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_without_engine_options_the_engines_found_are_used(command):
    assert cli.build_parser().parse_args([command]).engines is None


def test_bench_engine_option_measures_the_named_engine(capsys, takeall):
    code, out, _ = run_cli(
        capsys, "bench", "--engine", "takeall", "--algs", "sha256", *TINY, "--format", "json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["settings"]["engines"] == ["software", "takeall"]
    assert data["rows"][1]["offloaded"] is True


def test_sweep_engine_and_engines_combined(capsys, takeall):
    code, out, _ = run_cli(
        capsys, "sweep", "--engines", "software", "--engine", "takeall", "--sizes", "64",
        "--algs", "sha256", *TINY, "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["settings"]["engines"] == ["software", "takeall"]
