"""Issue 22.12: output cut by a closed pipe (``| head -1``) ends quietly, as Unix tools do:
nothing on stderr, exit status 141 (128 + SIGPIPE), never "[Errno 32] Broken pipe"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench_rows import bench_row

import cryptoffload

EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, as a shell shows for `yes | head -1`
SRC = str(Path(cryptoffload.__file__).resolve().parents[1])


def _into_closed_pipe(*argv: str) -> subprocess.CompletedProcess[bytes]:
    """Run the command with stdout a pipe whose reader has already gone (as after head -1)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("CRYPTOFFLOAD_POLICY", None)
    try:
        return subprocess.run(
            [sys.executable, "-m", "cryptoffload.tools.cli", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


def _saved_run(path: Path) -> str:
    trials = [99.0, 100.0, 101.0, 100.5]
    row = bench_row("software", 100.0, trials=trials, spread=None, noisy=None)
    path.write_text(json.dumps({"machine": {}, "settings": {}, "rows": [row]}))
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["selftest", "--json"],
        ["selftest"],
        ["engines", "-v"],
        ["engines", "--json"],
        ["verify", "--engines", "caam:model=t2080", "--algs", "sha256", "--trials", "4",
         "--time", "0.001", "--quiet"],
    ],
    ids=["selftest-json", "selftest", "engines-v", "engines-json", "verify"],
)  # fmt: skip
def test_output_into_a_closed_pipe_ends_quietly_with_status_141(argv):
    done = _into_closed_pipe(*argv)
    assert done.stderr == b""
    assert done.returncode == EXIT_PIPE_CLOSED


def test_compare_into_a_closed_pipe_ends_quietly_with_status_141(tmp_path):
    done = _into_closed_pipe(
        "compare", _saved_run(tmp_path / "a.json"), _saved_run(tmp_path / "b.json")
    )
    assert done.stderr == b""
    assert done.returncode == EXIT_PIPE_CLOSED
