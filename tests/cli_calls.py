"""Calling the `cryptoffload` command in-process from tests: its exit status and output."""

from __future__ import annotations

import pytest

from cryptoffload.tools import cli


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``cryptoffload ARGV``."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv: str) -> str:
    """The stderr of a command line argparse refuses (exit status 2)."""
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err
