"""The README's and every documentation page's examples run as written and print what they show;
the generated reference parts match the code.

Python blocks: the comment lines that follow a ``print(...)`` are what it prints (``...`` stands
for any text, as in doctest). Each block runs in a fresh namespace, in a fresh interpreter, so
that the default provider is the one a new user gets. Console examples: ``$ cryptoffload ...``
and its exact output. An sh block holds commands only (output is shown in console blocks); it
runs in bash with ``-e``, as a new user would: a fresh home and working directory, ``python``,
``python3`` and ``cryptoffload`` on this interpreter; those that cannot run here are excused by
name.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
import softhsm

ROOT = pathlib.Path(__file__).parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: Every page whose examples run: the README and the documentation site's pages.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
TEXTS = {page.relative_to(ROOT).as_posix(): page.read_text() for page in PAGES}


def _blocks(pattern: str) -> list[tuple[str, str]]:
    """(page, block text) of every fenced block whose opening line matches ``pattern``."""
    return [
        (name, block)
        for name, text in TEXTS.items()
        for block in re.findall(rf"^```{pattern}\n(.*?)^```", text, flags=re.M | re.S)
    ]


def _ids(items: list[tuple[str, str]], kind: str) -> list[str]:
    """``page:kind-N``, N counting from 1 within the page."""
    ids, seen = [], {}
    for name, _ in items:
        seen[name] = seen.get(name, 0) + 1
        ids.append(f"{name}:{kind}-{seen[name]}")
    return ids


BLOCKS = _blocks("python")


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


def test_the_readme_and_the_docs_have_python_blocks():
    assert sum(name == "README.md" for name, _ in BLOCKS) >= 1 and len(BLOCKS) >= 9


@pytest.mark.parametrize("page_code", BLOCKS, ids=_ids(BLOCKS, "python"))
def test_python_block_runs_as_written_and_prints_what_it_shows(page_code, tmp_path):
    page, code = page_code
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
        f"printed:\n{run.stdout}\n{page} shows:\n{want}"
    )


def _console_examples() -> list[tuple[str, tuple[str, str]]]:
    """(page, (command, output)) of every ``$ cryptoffload ...`` example in a console block."""
    examples = []
    for page, block in _blocks("console"):
        command, output, lines = None, [], block.splitlines()
        for line in lines:
            if line.startswith("$ "):
                if command is not None:
                    examples.append((page, (command, "\n".join(output))))
                command, output = line[2:], []
            elif command is not None and command.endswith("\\"):
                command = command[:-1] + " " + line.strip()
            else:
                output.append(line)
        if command is not None:
            examples.append((page, (command, "\n".join(output))))
    return examples


CONSOLE = _console_examples()


def test_the_docs_have_console_examples():
    assert len(CONSOLE) >= 3


@pytest.mark.parametrize("example", CONSOLE, ids=_ids(CONSOLE, "console"))
def test_console_example_prints_what_it_shows(example, tmp_path):
    _, (command, shown) = example
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


# -- the sh blocks ----------------------------------------------------------------------------

SH_BLOCKS = _blocks("(?:sh|bash|shell)")
SH_IDS = _ids(SH_BLOCKS, "sh")

#: The sh blocks that cannot run here, by their first command (as written, less a
#: trailing comment), each with why. Every other block runs: a new one either passes here or is
#: listed.
NOT_HERE = {
    "python3 -m pip install . && cryptoffload bench": (
        "installs from the index, and bench measures every engine for about a minute"
    ),
    "python3 -m pip install -e '.[test]' && python3 -m pytest -n auto": (
        "installs from the index, and is the whole test suite (this test is part of it)"
    ),
    "rig/setup && rig/run python3 -m pytest tests/test_afalg_guest.py "
    "tests/test_afalg_drivers.py": (
        "the kernel rig: boots a QEMU guest (minutes); .ci/run runs it after the suite"
    ),
    "git clone https://github.com/cryptodev-linux/cryptodev-linux && cd cryptodev-linux": (
        "builds and loads cryptodev-linux for a board's kernel, then runs on the board"
    ),
    "echo ffe301000.jr > /sys/bus/platform/drivers/caam_jr/unbind": (
        "on a board with a CAAM: unbinds the kernel's job ring driver, as root"
    ),
    "modprobe tls caamalg": (
        "on a board with a CAAM and a kernel with kTLS: loads modules, as root; the rig's "
        "tests/test_ktls_guest.py runs the same steps with the CPU's driver"
    ),
}
#: Single commands left out of a block that runs.
SYNOPSIS = "a synopsis: brackets mark options, not shell"
NOT_HERE_COMMANDS = {
    "python -m cryptoffload run [--engines LIST] [--policy FILE] [--counters FILE] "
    "[--only PKG,...] [--tls] (-m MODULE | SCRIPT) [ARGS...]": SYNOPSIS,
}

#: What a reader is told to have, and what the blocks run on: the PIN they choose for the token.
USER_ENV = {"PIN": "246810", "SO_PIN": "13579111"}
#: An application of the reader's, for `run -m pytest tests/`: its tests use `cryptography`.
APP_TEST = """\
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def test_seal_and_open():
    aes = AESGCM(bytes(16))
    assert aes.decrypt(bytes(12), aes.encrypt(bytes(12), b"data", None), None) == b"data"
"""


def _sh_commands(block: str) -> list[str]:
    """The block's commands: continued lines joined, comment lines and trailing comments left
    out."""
    commands, pending = [], ""
    for line in block.splitlines():
        line = pending + line.strip() if pending else line.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        line = re.sub(r"\s+#\s.*$", "", line)
        if line and not line.startswith("#"):
            commands.append(line)
    return commands


def _to_run(block: str) -> list[str]:
    commands = _sh_commands(block)
    if commands[0] in NOT_HERE:
        return []
    return [c for c in commands if c not in NOT_HERE_COMMANDS]


RUN_HERE = {name: b for name, (_, b) in zip(SH_IDS, SH_BLOCKS, strict=True) if _to_run(b)}


def test_the_docs_have_sh_blocks_to_run_here():
    assert len(SH_BLOCKS) >= 5 and len(RUN_HERE) >= 2


def test_every_block_or_command_excused_is_in_a_page():
    firsts = {_sh_commands(block)[0] for _, block in SH_BLOCKS}
    commands = {c for _, block in SH_BLOCKS for c in _sh_commands(block)}
    assert sorted(set(NOT_HERE) - firsts) == []
    assert sorted(set(NOT_HERE_COMMANDS) - commands) == []


@pytest.mark.parametrize("page_block", SH_BLOCKS, ids=SH_IDS)
def test_sh_block_is_valid_shell(page_block):
    _, block = page_block
    script = "\n".join(c for c in _sh_commands(block) if NOT_HERE_COMMANDS.get(c) != SYNOPSIS)
    check = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def _shims(directory: pathlib.Path) -> None:
    """``python``, ``python3`` and ``cryptoffload`` as a reader's venv has them, on this
    interpreter."""
    directory.mkdir()
    for name, line in (
        ("python", f'exec {shlex.quote(sys.executable)} "$@"'),
        ("python3", f'exec {shlex.quote(sys.executable)} "$@"'),
        ("cryptoffload", f'exec {shlex.quote(sys.executable)} -m cryptoffload "$@"'),
    ):
        (directory / name).write_text(f"#!/bin/sh\n{line}\n")
        (directory / name).chmod(0o755)


def _environment(home: pathlib.Path, bin_dir: pathlib.Path) -> dict[str, str]:
    """A new user's: this process's environment less what the tests set for themselves."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CRYPTOFFLOAD_", "PYTEST_", "SOFTHSM2_")) and k != softhsm.PIN_ENV
    }
    env.update(USER_ENV, HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    return env


@pytest.mark.parametrize("name", list(RUN_HERE))
def test_sh_block_runs_as_written(name, tmp_path):
    commands = _to_run(RUN_HERE[name])
    script = "\n".join(commands)
    if "softhsm2-util" in script or "pkcs11:" in script:
        if softhsm.why_missing():
            pytest.skip(softhsm.why_missing())
        module = softhsm.module_path()
        assert module is not None
        script = script.replace(softhsm.MODULE_PATHS[0], module)  # where this system has it
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_app.py").write_text(APP_TEST)
    _shims(tmp_path / "bin")
    trap = "trap 'echo \"documented command failed ($?): $BASH_COMMAND\" >&2' ERR\n"
    run = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", trap + script],
        capture_output=True,
        text=True,
        cwd=work,
        env=_environment(home, tmp_path / "bin"),
        timeout=300,
    )
    assert run.returncode == 0, f"{run.stderr[-3000:]}\n{run.stdout[-3000:]}"
    assert "Traceback" not in run.stderr and "Warning" not in run.stderr, run.stderr
    if "cryptoffload verify" in script:
        assert "verified: " in run.stdout, run.stdout[-3000:]
    if "--counters ops.json -m pytest tests/" in script:  # the application's crypto, counted
        counters = json.loads((work / "ops.json").read_text())
        software = next(e for e in counters["engines"] if e["name"] == "software")
        assert software["counters"]["aes-128-gcm"]["ops"] == 2
        assert counters["exit_status"] == 0


# -- the generated parts, the reference tables, the site ---------------------------------------


def _generated_module():
    spec = importlib.util.spec_from_file_location("docs_generated", DOCS / "generated.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATED = _generated_module()


@pytest.mark.parametrize("part", list(GENERATED.PARTS))
def test_generated_part_is_what_the_code_gives_now(part):
    path, text, regenerated = GENERATED.rendered(part)
    assert text == regenerated, f"{path} is out of date: run python docs/generated.py"


def test_the_cli_reference_has_every_command_and_option_of_the_parsers():
    from cryptoffload.tools.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text()
    for words, _, parser in GENERATED._commands(build_parser(), ()):
        assert f"`cryptoffload {' '.join(words)}`" in page
        for action in parser._actions:
            for option in action.option_strings:
                assert f"`{option}" in page, (words, option)


def test_the_decline_reasons_table_lists_every_reason():
    from cryptoffload.errors import REASONS

    text = (DOCS / "reference" / "counters.md").read_text()
    table = re.findall(r"^\| `([a-z-]+)` \|", text, flags=re.M)
    assert sorted(table) == sorted(REASONS)


def test_the_readme_keeps_the_two_set_up_commands():
    readme = [block for name, block in SH_BLOCKS if name == "README.md"]
    firsts = [_sh_commands(block)[0] for block in readme]
    assert firsts[:2] == [
        "python3 -m pip install . && cryptoffload bench",
        "python3 -m pip install -e '.[test]' && python3 -m pytest -n auto",
    ]


def test_the_index_answers_the_common_questions_in_one_link():
    index = (DOCS / "index.md").read_text()
    for target in (
        "howto/offload-an-application.md",
        "explanation/how-an-op-runs.md#streams-and-which-engines-stream-gcm",
        "reference/counters.md#what-declined-below-threshold-3-means",
    ):
        assert f"]({target})" in index


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra (pip install -e '.[docs]') is not here")
    pytest.importorskip("myst_parser", reason="the docs extra is not here")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    build = subprocess.run(
        [*command, str(DOCS), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]


def test_the_readme_links_lead_to_pages_that_exist():
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text())
    assert len(links) >= 10
    assert [link for link in links if not (ROOT / link).is_file()] == []
