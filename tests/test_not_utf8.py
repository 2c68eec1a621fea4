"""Issue 22.11: a policy file, a calibrate --write target or a caam words file that is not UTF-8:
one ValueError line naming the path (and the variable), exit status 2, never UnicodeDecodeError."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from cryptoffload.core.policy import ENV_VAR, Policy
from cryptoffload.tools.cli import main

GARBAGE = b"\xfe\xfb\x00\xc3(require = []\n"


@pytest.fixture
def garbage(tmp_path: Path) -> Path:
    path = tmp_path / "garbage.toml"
    path.write_bytes(GARBAGE)
    return path


def test_policy_load_of_a_non_utf8_file_is_a_value_error_naming_the_path(garbage):
    with pytest.raises(ValueError, match="not UTF-8") as info:
        Policy.load(garbage)
    assert not isinstance(info.value, UnicodeDecodeError)
    assert str(info.value).startswith(f"{garbage}: ")


def test_non_utf8_policy_in_environment_names_the_variable_and_path(garbage, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(garbage))
    with pytest.raises(ValueError) as info:
        Policy.from_env()
    assert not isinstance(info.value, UnicodeDecodeError)
    assert str(info.value).startswith(f"{ENV_VAR}={garbage}: not UTF-8")


def test_selftest_with_non_utf8_policy_in_environment_exits_2_naming_it(
    garbage, monkeypatch, capsys
):
    from cryptoffload import set_default_provider

    monkeypatch.setenv(ENV_VAR, str(garbage))
    set_default_provider(None)
    try:
        rc = main(["selftest"])
    finally:
        set_default_provider(None)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and f"{ENV_VAR}={garbage}: not UTF-8" in err


def test_calibrate_write_to_a_non_utf8_file_exits_2_naming_it(garbage, capsys):
    rc = main(["calibrate", "--engines", "software", "--algs", "sha256", "--write", str(garbage)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and f"{garbage}: not UTF-8" in err


def test_caam_run_words_file_not_utf8_exits_2_naming_it(garbage, capsys):
    rc = main(["caam", "run", "--words-file", str(garbage)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and f"--words-file {garbage}: not UTF-8" in err


def test_caam_run_shared_file_not_utf8_exits_2_naming_it(garbage, capsys):
    rc = main(["caam", "run", "--shared-file", str(garbage), "b0800001"])
    err = capsys.readouterr().err
    assert rc == 2 and f"--shared-file {garbage}: not UTF-8" in err


def test_caam_run_words_from_undecodable_stdin_exits_2(monkeypatch, capsys):
    stdin = io.TextIOWrapper(io.BytesIO(GARBAGE), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    rc = main(["caam", "run", "-"])
    err = capsys.readouterr().err
    assert rc == 2 and "standard input: not utf-8 text" in err
