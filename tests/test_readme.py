"""The README's Python blocks run as written and print what their comments show.

In a block, the comment lines that follow a ``print(...)`` are what it prints (``...`` stands
for any text, as in doctest). Each block runs in a fresh namespace, in a fresh interpreter, so
that the default provider is the one a new user gets.
"""

from __future__ import annotations

import doctest
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.M | re.S)


def _expected_output(code: str) -> str:
    """The text of the comment lines under each print(...), in order."""
    lines, out, after_print = code.splitlines(), [], False
    for line in lines:
        if line.lstrip().startswith("print("):
            after_print = True
            continue
        if after_print and line.startswith("#"):
            out.append(line[2:] if line.startswith("# ") else line[1:])
            continue
        after_print = False
    return "\n".join(out) + "\n" if out else ""


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block-{i + 1}" for i in range(len(BLOCKS))])
def test_readme_block_runs_as_written_and_prints_what_it_shows(code, tmp_path):
    run = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    checker = doctest.OutputChecker()
    want = _expected_output(code)
    assert checker.check_output(want, run.stdout, doctest.ELLIPSIS), (
        f"printed:\n{run.stdout}\nthe README shows:\n{want}"
    )


def _console_examples() -> list[tuple[str, str]]:
    """(command, output) of every ``$ cryptoffload ...`` example in a console block."""
    examples = []
    for block in re.findall(r"^```console\n(.*?)^```", README.read_text(), flags=re.M | re.S):
        command, output, lines = None, [], block.splitlines()
        for line in lines:
            if line.startswith("$ "):
                if command is not None:
                    examples.append((command, "\n".join(output)))
                command, output = line[2:], []
            elif command is not None and command.endswith("\\"):
                command = command[:-1] + " " + line.strip()
            else:
                output.append(line)
        if command is not None:
            examples.append((command, "\n".join(output)))
    return examples


CONSOLE = _console_examples()


def test_the_readme_has_console_examples():
    assert len(CONSOLE) >= 3


@pytest.mark.parametrize("example", CONSOLE, ids=[f"console-{i + 1}" for i in range(len(CONSOLE))])
def test_readme_console_example_prints_what_it_shows(example, tmp_path):
    command, shown = example
    words = shlex.split(command)
    assert words[0] == "cryptoffload"
    run = subprocess.run(
        [sys.executable, "-m", "cryptoffload", *words[1:]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip("\n") == shown.rstrip("\n")
