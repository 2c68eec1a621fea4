"""`cryptoffload run`: an unchanged program and the Python processes it starts are offloaded and
counted; its arguments and exit status pass through; bad use is a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cryptoffload.tools.run import split

PROGRAM = textwrap.dedent(
    """
    import subprocess, sys
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    print(hashes.__name__, sys.argv[1:])
    AESGCM(bytes(16)).encrypt(bytes(12), b"x" * 100, None)
    if sys.argv[1:] == ["parent"]:
        subprocess.run([sys.executable, __file__, "child"], check=True)
        sys.exit(7)
    """
)


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cryptoffload", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_a_program_and_its_child_are_offloaded_and_counted_in_one_file(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    counters = tmp_path / "counters.json"
    done = run("--engines", "passthrough", "--counters", str(counters), str(script), "parent")
    assert done.returncode == 7, done.stderr
    assert done.stdout.splitlines() == [
        "cryptoffload.hashes ['parent']",
        "cryptoffload.hashes ['child']",
    ]
    report = json.loads(counters.read_text())
    assert report["processes"] == 2
    assert report["exit_status"] == 7
    assert report["command"] == [str(script), "parent"]
    rows = {row["name"]: row for row in report["engines"]}
    assert rows["passthrough"]["counters"]["aes-128-gcm"]["ops"] == 2
    assert rows["passthrough"]["counters"]["aes-128-gcm"]["bytes"] == 200
    assert rows["passthrough"]["available"] is True


def test_run_m_runs_a_module_with_its_arguments(tmp_path):
    (tmp_path / "appmod.py").write_text(PROGRAM)
    done = run("--engines", "software", "-m", "appmod", "-x", "--flag", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cryptoffload.hashes ['-x', '--flag']"


def test_only_leaves_other_importers_on_cryptography(tmp_path):
    (tmp_path / "appmod.py").write_text(PROGRAM)
    done = run("--only", "elsewhere", "-m", "appmod", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cryptography.hazmat.primitives.hashes")


def test_counters_are_written_when_the_program_fails(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text(
        "from cryptography.hazmat.primitives import hashes\n"
        "hashes.Hash(hashes.SHA256()).finalize()\nraise RuntimeError('boom')\n"
    )
    counters = tmp_path / "c.json"
    done = run("--engines", "passthrough", "--counters", str(counters), str(script))
    assert done.returncode == 1
    assert "RuntimeError: boom" in done.stderr
    rows = {row["name"]: row for row in json.loads(counters.read_text())["engines"]}
    assert rows["passthrough"]["counters"]["sha256"]["ops"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a SCRIPT or -m MODULE"),
        (("no_such_script.py",), "can't open file"),
        (("--engines", "nosuch", "x.py"), "unknown engine"),
        (("--engines", ",,", "x.py"), "no engine named in --engines"),
    ],
)
def test_bad_use_says_what_is_wrong(tmp_path, args, message):
    (tmp_path / "x.py").write_text("")
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr


def test_the_programs_options_are_not_runs():
    assert split(["--engines", "a,b", "-m", "pytest", "-q", "--only", "x"]) == (
        ["--engines", "a,b", "-m", "pytest"],
        ["-q", "--only", "x"],
    )
    assert split(["--counters", "f", "app.py", "--engines", "z"]) == (
        ["--counters", "f", "app.py"],
        ["--engines", "z"],
    )
    assert split(["--", "-odd.py", "a"]) == (["-odd.py"], ["a"])


def test_a_child_runs_the_interpreters_own_sitecustomize_too(tmp_path):
    theirs = tmp_path / "site"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIRS_RAN'] = 'yes'\n")
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'import os; "
        "import cryptography.hazmat.primitives.hashes as h; "
        'print(os.environ.get("THEIRS_RAN"), h.__name__)\'], check=True)\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "run", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(theirs)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "yes cryptoffload.hashes"


ENGINES_SEEN = textwrap.dedent(
    """
    import subprocess, sys
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptoffload.core.provider import current

    AESGCM(bytes(16)).encrypt(bytes(12), b"x" * 100, None)
    print(sys.argv[1], [engine.name for engine in current().engines])
    if sys.argv[1:] == ["parent"]:
        subprocess.run([sys.executable, __file__, "child"], check=True)
    """
)


def test_engine_options_after_a_comma_stay_with_their_spec_in_the_program_and_its_children(
    tmp_path,
):
    script = tmp_path / "engines_seen.py"
    script.write_text(ENGINES_SEEN)
    done = run("--engines", "caam:model=t2080,seed=01,software", str(script), "parent")
    assert done.returncode == 0, done.stderr
    names = ["caam:model=t2080,seed=01", "software"]
    assert done.stdout.splitlines() == [f"parent {names}", f"child {names}"]


def test_a_pkcs11_spec_with_its_token_and_pin_reaches_the_program_and_its_children(
    tmp_path, softhsm_token
):
    script = tmp_path / "engines_seen.py"
    script.write_text(ENGINES_SEEN)
    counters = tmp_path / "c.json"
    done = run(
        "--engines", f"{softhsm_token.spec},software", "--counters", str(counters),
        str(script), "parent",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = [f"pkcs11:{softhsm_token.label}", "software"]
    assert done.stdout.splitlines() == [f"parent {names}", f"child {names}"]
    report = json.loads(counters.read_text())
    rows = {row["name"]: row for row in report["engines"]}
    assert report["processes"] == 2
    assert rows[names[0]]["counters"]["aes-128-gcm"]["ops"] == 2


def python(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.mark.parametrize(
    "target",
    [("adir",), ("-m", "nosuch_module"), ("-m", "apkg"), ("nosuchfile.py",)],
    ids=["directory without __main__", "no such module", "package without __main__", "no file"],
)
def test_a_target_that_cannot_run_is_one_line_and_pythons_exit_status(tmp_path, target):
    (tmp_path / "adir").mkdir()
    (tmp_path / "apkg").mkdir()
    (tmp_path / "apkg" / "__init__.py").write_text("")
    theirs = python(*target, cwd=tmp_path)
    ours = run(*target, cwd=tmp_path)
    assert ours.returncode == theirs.returncode != 0
    assert theirs.stderr.count("\n") == 1
    assert ours.stderr == "cryptoffload run: " + theirs.stderr.split(": ", 1)[1]


FAILING = {
    "raises": "def inner():\n    raise RuntimeError('boom')\n\ninner()\n",
    "imports what is not there": "import nosuch_module_for_run\n",
    "imports a module that raises": "import helper_that_raises\n",
    "has a syntax error": "def (:\n",
    "has its own excepthook": "import sys\n"
    "sys.excepthook = lambda t, v, tb: print('hooked', t.__name__, v, file=sys.stderr)\n"
    "raise KeyError(1)\n",
    "has an excepthook that raises": "import sys\n"
    "def hook(t, v, tb):\n    raise OSError('the hook failed')\n\n"
    "sys.excepthook = hook\nraise KeyError(1)\n",
}


@pytest.mark.parametrize("source", FAILING.values(), ids=FAILING.keys())
def test_a_failing_scripts_traceback_and_status_are_pythons(tmp_path, source):
    (tmp_path / "helper_that_raises.py").write_text("raise ValueError('at import')\n")
    script = tmp_path / "fails.py"
    script.write_text(source)
    counters = tmp_path / "c.json"
    theirs = python(str(script), cwd=tmp_path)
    ours = run("--engines", "software", "--counters", str(counters), str(script), cwd=tmp_path)
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr == theirs.stderr
    assert json.loads(counters.read_text())["exit_status"] == 1


def test_a_failing_modules_traceback_shows_only_its_own_frames(tmp_path):
    (tmp_path / "failmod.py").write_text(FAILING["raises"])
    done = run("-m", "failmod", cwd=tmp_path)
    assert done.returncode == 1
    frames = [line for line in done.stderr.splitlines() if line.startswith("  File ")]
    assert [line.split(", ")[0] for line in frames] == [f'  File "{tmp_path / "failmod.py"}"'] * 2
    assert done.stderr.endswith("RuntimeError: boom\n")


def test_a_missing_module_still_writes_the_counters(tmp_path):
    counters = tmp_path / "c.json"
    done = run("--counters", str(counters), "-m", "nosuch_module", cwd=tmp_path)
    assert done.returncode == 1
    report = json.loads(counters.read_text())
    assert report["exit_status"] == 1 and report["command"] == ["-m", "nosuch_module"]


@pytest.mark.parametrize(
    "content", ["my notes\n", '{"run": "x"}\n', "[1, 2]\n"], ids=["text", "other JSON", "a list"]
)
def test_counters_never_replace_a_file_that_is_not_a_counters_file(tmp_path, content):
    notes = tmp_path / "notes.txt"
    notes.write_text(content)
    script = tmp_path / "app.py"
    script.write_text("open('ran', 'w').close()\n")
    done = run("--counters", str(notes), str(script), cwd=tmp_path)
    assert done.returncode == 2
    assert f"--counters {notes}: not a counters file" in done.stderr
    assert notes.read_text() == content
    assert not (tmp_path / "ran").exists()  # refused before the program starts


def test_counters_are_not_written_into_a_directory_or_one_that_does_not_exist(tmp_path):
    script = tmp_path / "app.py"
    script.write_text("open('ran', 'w').close()\n")
    for where, why in ((tmp_path, "is a directory"), (tmp_path / "no" / "c.json", "no directory")):
        done = run("--counters", str(where), str(script), cwd=tmp_path)
        assert done.returncode == 2 and f"--counters {where}: {why}" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_counters_replace_an_earlier_runs_counters_and_fill_an_empty_file(tmp_path):
    counters = tmp_path / "c.json"
    counters.write_text("")
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    runs = []
    for _ in range(2):
        done = run("--engines", "passthrough", "--counters", str(counters), str(script), "x")
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(counters.read_text()))
    assert runs[0]["run"] != runs[1]["run"]
    assert runs[1]["processes"] == 1
    rows = {row["name"]: row for row in runs[1]["engines"]}
    assert rows["passthrough"]["counters"]["aes-128-gcm"]["ops"] == 1


#: What ``run`` must not load before its program asks for crypto (issue 32: a short-lived program
#: should start within 30 ms of python's): the provider, its engines and policy, `cryptography`,
#: the hashlib/hmac views, and the heavy libraries behind them.
NOT_AT_START_UP = (
    "cryptography",
    "cryptoffload.core.provider",
    "cryptoffload.core.lane",
    "cryptoffload.core.policy",
    "cryptoffload.errors",
    "cryptoffload.engines.software",
    "cryptoffload.engines.afalg",
    "cryptoffload.engines.cryptodev",
    "cryptoffload.engines.caam",
    "cryptoffload.caam",
    "cryptoffload.stdlib",
    "cryptoffload.ktls",
    "gmpy2",
    "rich",
    "importlib.metadata",
    "asyncio",
    "ssl",
    "tomllib",
    "dataclasses",
)
#: A program that prints the heavy modules loaded when it runs, then starts itself as a child.
LOADED = textwrap.dedent(
    f"""
    import subprocess, sys
    if "hashlib" in sys.argv:
        import hashlib, hmac

    heavy = tuple(name + "." for name in {NOT_AT_START_UP!r})
    print(sys.argv[1], sorted(m for m in sys.modules if (m + ".").startswith(heavy)), flush=True)
    if sys.argv[1] == "parent":
        sys.exit(subprocess.call([sys.executable, __file__, "child", *sys.argv[2:]]))
    """
)


@pytest.mark.parametrize(
    ("options", "program"),
    [((), ()), (("--tls",), ()), ((), ("hashlib",))],
    ids=["engines found", "tls", "a program importing hashlib and hmac"],
)
def test_run_starts_a_program_and_its_child_without_loading_crypto_it_has_not_asked_for(
    tmp_path, options, program
):
    from cryptoffload import engines

    if program and engines.may_discover_any():
        pytest.skip("an engine's device may be here: hashlib's view is decided from the provider")
    script = tmp_path / "loaded.py"
    script.write_text(LOADED)
    done = run(*options, str(script), "parent", *program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["parent []", "child []"]


PLAIN_COMMAND_LINES = [
    ["app.py"],
    ["-m", "pkg.mod"],
    ["--engines", "software", "app.py"],
    ["--engine", "caam:model=t2080,seed=01,software", "--engines", "afalg", "app.py"],
    ["--policy", "p.toml", "--counters", "c.json", "--only", "a,b", "--tls", "-m", "mod"],
    ["--only", "", "--counters", "", "app.py"],
    ["--tls", "--tls", "--policy", "a b.toml", "app.py"],
    [],
]
ARGPARSES_COMMAND_LINES = [
    ["-h"],
    ["--help"],
    ["--engines=software", "app.py"],
    ["--eng", "software", "app.py"],
    ["--counters"],
    ["--policy", "--tls", "app.py"],
    ["--engines", ",,", "app.py"],
    ["-mmod"],
    ["-m"],
    ["-m", "-x"],
    ["-odd.py"],
    ["--nosuch", "app.py"],
]


@pytest.mark.parametrize("own", PLAIN_COMMAND_LINES, ids=" ".join)
def test_runs_plain_command_lines_are_read_as_argparse_reads_them(own):
    import argparse

    from cryptoffload.tools.run import add_arguments, read_plainly

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert vars(read_plainly(own)) == vars(parser.parse_args(own))


@pytest.mark.parametrize("own", ARGPARSES_COMMAND_LINES, ids=" ".join)
def test_other_command_lines_are_left_to_argparse(own):
    from cryptoffload.tools.run import read_plainly

    assert read_plainly(own) is None


SCRIPT_SEES = textwrap.dedent(
    """
    import sys
    names = ("__name__", "__file__", "__cached__", "__doc__", "__loader__", "__package__",
             "__spec__")
    SEEN.append({name: globals()[name] for name in names})
    SEEN.append((sys.modules["__main__"].__dict__ is globals(), sys.argv[0]))
    """
)


def test_a_script_runs_in_its_own_main_module_as_runpy_runs_it(tmp_path, monkeypatch):
    import builtins
    import runpy

    from cryptoffload.tools.run import run_path

    script = tmp_path / "sees.py"
    script.write_text(SCRIPT_SEES)
    monkeypatch.setattr(sys, "argv", ["typed.py", "x"])
    main, seen = sys.modules["__main__"], {}
    for way, run_it in {"runpy": runpy.run_path, "ours": run_path}.items():
        monkeypatch.setattr(builtins, "SEEN", [], raising=False)
        if way == "runpy":
            run_it(str(script), run_name="__main__")
        else:
            run_it(str(script))
        seen[way] = builtins.SEEN
        assert sys.modules["__main__"] is main and sys.argv == ["typed.py", "x"]
    assert seen["ours"] == seen["runpy"]
    assert seen["ours"][1] == (True, str(script))


def test_one_aes_gcm_op_loads_no_library_it_does_not_use(tmp_path):
    # Loaded by the first op on a machine without engines: the provider and the software engine,
    # not the big-integer, asyncio, TOML or libc-finding libraries, nor a CAAM driver with no
    # block to drive.
    unused = ["gmpy2", "importlib.metadata", "asyncio", "tomllib", "ctypes.util", "rich"]
    if not os.path.exists("/proc/device-tree"):
        unused.append("cryptoffload.caam.jr")
    script = tmp_path / "one_op.py"
    script.write_text(
        "import sys\n"
        "from cryptography.hazmat.primitives.ciphers.aead import AESGCM\n"
        "AESGCM(bytes(16)).encrypt(bytes(12), b'one record', None)\n"
        f"unused = tuple(name + '.' for name in {unused!r})\n"
        "print(AESGCM.__module__, sorted(m for m in sys.modules if (m + '.').startswith(unused)))\n"
    )
    done = run(str(script))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cryptoffload.aead []"


@pytest.mark.parametrize("how", ["--policy", "CRYPTOFFLOAD_POLICY"])
def test_a_bad_policy_is_refused_before_the_program_starts(tmp_path, how):
    bad = tmp_path / "bad.toml"
    bad.write_text("[unclosed\n")
    script = tmp_path / "app.py"
    script.write_text("open('ran', 'w').close()\n")
    options = ["--policy", str(bad)] if how == "--policy" else []
    done = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "run", *options, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, **({how: str(bad)} if how != "--policy" else {})},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("cryptoffload run: ") and "not valid TOML" in done.stderr
    assert not (tmp_path / "ran").exists()
