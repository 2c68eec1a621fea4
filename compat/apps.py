"""Runs unmodified applications' own test suites on `cryptography`, then offloaded through
`python -m cryptoffload run` (issue 21): paramiko, PyJWT and aioquic at pinned versions.

A private venv (``~/.cache/cryptoffload-compat/apps-venv`` unless ``--venv``) gets the pinned
applications with their suites' test dependencies, and cryptoffload built from the repository
this script lives in (reinstalled on every run). Each application's sdist is fetched from the
package index's simple API (its sha256 checked against the index's link) and cached; its test
suite runs, as it ships, three ways: plain ``python -m pytest`` on `cryptography` (the baseline,
cryptoffload not imported), ``python -m cryptoffload run -m pytest`` with the default provider,
and the same with ``--engines passthrough`` (every op on the engine path). Printed per suite:
passed/failed/skipped side by side, the ops counted per algorithm (``--counters``), every test
whose outcome differs from the baseline with its first error line, and the wall times. Tests the
baseline itself cannot pass here (network, timing) are deselected in all three runs, each with
its reason in its suite's ``deselect`` (none is, at these pins). ``--e2e`` also runs
compat/e2e_paramiko.py and compat/e2e_aioquic.py (an SSH session and a QUIC/TLS 1.3 handshake in
one process) the same three ways; the exit status is 1 where a suite fails on `cryptography`,
an offloaded run differs from it, a run hits its timeout, or an e2e script fails.
``--configs ...,only`` adds a fourth way on request: the pass-through engine with ``--only`` the
application's package, its tests' own imports left on `cryptography` (keys cross that boundary).

    python3 compat/apps.py [--suites paramiko,pyjwt,aioquic] [--e2e | --e2e-only]
                           [--configs cryptography,default,passthrough,only] [--venv DIR]
                           [--timeout SECONDS] [--json] [-v] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from sdist import CACHE, fetch_sdist, sha256_of

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
VENV = CACHE / "apps-venv"

#: The suites' runner, one for all three (PyJWT's dev requirements hold pytest below 9).
PYTEST = "pytest==8.4.2"


@dataclasses.dataclass(frozen=True)
class Suite:
    """An application whose own test suite is run: its pinned release, the sdist it comes in,
    what the suite needs besides pytest, and the tests left out (pattern -> reason)."""

    project: str
    version: str
    sdist: str
    package: str
    test_deps: tuple[str, ...] = ()
    #: The application's own dependencies, pinned too: they take part in its crypto (pyOpenSSL
    #: verifies aioquic's certificates, PyNaCl and bcrypt serve paramiko's keys), so a new
    #: release of one must not change a column unannounced.
    deps: tuple[str, ...] = ()
    #: Files and folders of the sdist the suite needs (tests, and the file with its pytest
    #: settings); the application's own source is not extracted: the installed one is tested.
    extract: tuple[str, ...] = ("tests",)
    args: tuple[str, ...] = ("tests",)
    #: The pytest plugins (entry-point names) of its test dependencies the suite runs with;
    #: those of the other suites' are switched off (the venv is shared, plugins load by
    #: themselves: pytest-relaxed would collect every module under PyJWT's tests/ as tests).
    plugins: tuple[str, ...] = ()
    #: Node-id patterns (fnmatch; a pattern also takes the test's parameter cases) of tests
    #: left out of all three runs, each with why: only for a test that needs the network or
    #: fails now and then on `cryptography` alone. None does at these pins: each suite passed
    #: whole on `cryptography` in every run so far (three of each), and their network tests
    #: use loopback servers or mocks.
    deselect: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def pin(self) -> str:
        return f"{self.project}=={self.version}"


SUITES: dict[str, Suite] = {
    "paramiko": Suite(
        project="paramiko",
        version="5.1.0",
        sdist="paramiko-5.1.0.tar.gz",
        package="paramiko",
        # pyproject.toml's dev group: pytest-relaxed (its conftest and spec-style test names),
        # icecream (imported by tests/_util.py); invoke comes with paramiko itself.
        test_deps=("pytest-relaxed==2.0.2", "icecream==2.2.0"),
        deps=("bcrypt==5.0.0", "invoke==3.0.3", "pynacl==1.6.2"),
        extract=("tests", "pytest.ini"),
        plugins=("relaxed",),
        deselect={
            "tests/test_transport.py::TestStrictKex::"
            "test_sequence_numbers_reset_on_newkeys_when_strict": (
                "a race in the test itself: it asserts the sequence numbers before the client "
                "thread has read EXT_INFO; with hmac-sha256 routed through the provider under "
                "run the client is slower and loses it (a 0.5 s wait in the test: 3 passes of 3)"
            ),
        },
    ),
    "pyjwt": Suite(
        project="PyJWT",
        version="2.15.1",
        sdist="pyjwt-2.15.1.tar.gz",
        package="jwt",
        # The 'tests' group is pytest (and coverage, not needed to run them); 'crypto' is
        # cryptography, which cryptoffload brings. pyproject.toml holds its pytest settings
        # (warnings are errors).
        extract=("tests", "pyproject.toml"),
    ),
    "aioquic": Suite(
        project="aioquic",
        version="1.7.2",
        sdist="aioquic-1.7.2.tar.gz",
        package="aioquic",
        # requirements/test.txt is coverage alone; the tests import nothing beyond aioquic's
        # own dependencies. The suite is unittest's, run by pytest.
        deps=(
            "certifi==2026.10.19.post1",
            "pylsqpack==1.0.0",
            "pyopenssl==26.4.0",
            "service-identity==26.1.0",
        ),
        extract=("tests",),
    ),
}

#: The ways a suite runs: the label and the arguments before ``-m pytest`` (None: the baseline,
#: plain ``python -m pytest`` without cryptoffload; ``{package}``: the application's top-level
#: package). ``only`` (not run unless asked for) redirects the application's imports alone, so
#: its tests' own keys stay `cryptography`'s and cross into it: the boundary `--only` draws.
CONFIGS: dict[str, tuple[str, ...] | None] = {
    "cryptography": None,
    "default": ("-m", "cryptoffload", "run"),
    "passthrough": ("-m", "cryptoffload", "run", "--engines", "passthrough"),
    "only": ("-m", "cryptoffload", "run", "--engines", "passthrough", "--only", "{package}"),
}
DEFAULT_CONFIGS = ("cryptography", "default", "passthrough")

#: The end-to-end scripts under compat/, and the package each drives (for ``only``).
E2E = {"e2e_paramiko": "paramiko", "e2e_aioquic": "aioquic"}
#: Seconds between two progress lines of a run still going.
PROGRESS = 30.0


# -- the venv -------------------------------------------------------------------------------------


def requirements(names: Sequence[str] = tuple(SUITES)) -> list[str]:
    """What the venv holds besides cryptoffload: the named applications, their test
    dependencies, and `cryptography` at the version installed beside this script's interpreter
    (so the baseline is the `cryptography` the project develops against), every one pinned."""
    reqs = [PYTEST]
    for suite in (SUITES[name] for name in names):
        reqs += [suite.pin, *suite.deps, *suite.test_deps]
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        reqs.append(f"cryptography=={importlib.metadata.version('cryptography')}")
    return sorted(set(reqs))


def venv_python(venv: pathlib.Path) -> pathlib.Path:
    return venv / "bin" / "python"


def ensure_venv(venv: pathlib.Path, log: Any, names: Sequence[str] = tuple(SUITES)) -> pathlib.Path:
    """The venv's interpreter, after making the venv (once), installing the pinned requirements
    (when they changed) and cryptoffload from this repository (every time)."""
    python = venv_python(venv)
    stamp = venv / "cryptoffload-apps.json"
    wanted = {
        "python": sys.version.split()[0],
        "requirements": requirements(names),
        # cryptoffload's own dependencies: the reinstall below takes none of them.
        "pyproject": sha256_of(REPO / "pyproject.toml"),
    }
    if not python.exists():
        log(f"creating the venv {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        log(f"installing {', '.join(wanted['requirements'])} and cryptoffload into {venv}")
        stamp.unlink(missing_ok=True)  # a failed install leaves no stamp: the next run redoes it
        try:
            _pip(python, str(REPO), *wanted["requirements"])
        except SystemExit:
            log(
                "the pins of these suites do not install beside cryptography "
                f"{importlib.metadata.version('cryptography')} (pip's reason above); "
                "--suites runs the others"
            )
            raise
        stamp.write_text(json.dumps(wanted))
    # Not editable, and reinstalled every time (pip may keep an installed 0.1.0 as satisfying
    # the directory's 0.1.0): the venv runs cryptoffload as a user installs it (a wheel built
    # from the tree as it is now, with pyproject.toml's package list), and a venv shared by
    # several checkouts runs the one that invoked the runner, not the last one installed.
    log(f"reinstalling cryptoffload from {REPO}")
    _pip(python, "--no-deps", "--force-reinstall", str(REPO))
    return python


def _pip(python: pathlib.Path, *args: str) -> None:
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"pip install failed ({' '.join(args)})")


# -- the sdists -----------------------------------------------------------------------------------


def extract(sdist: pathlib.Path, wanted: tuple[str, ...], dest: pathlib.Path) -> pathlib.Path:
    """The parts ``wanted`` of the sdist under ``dest``; returns the directory holding them."""
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        members = [
            m
            for m in tar.getmembers()
            if any(m.name == f"{top}/{w}" or m.name.startswith(f"{top}/{w}/") for w in wanted)
        ]
        tar.extractall(dest, members=members, filter="data")
    return dest / top


# -- running --------------------------------------------------------------------------------------


def command(
    python: pathlib.Path,
    config: str,
    counters: pathlib.Path | None,
    *rest: str,
    package: str = "",
) -> list[str]:
    """The command line of one run: ``rest`` (``-m pytest ...`` or a script) under ``config``,
    for the application whose top-level package is ``package``."""
    prefix = CONFIGS[config]
    if prefix is None:
        return [str(python), *rest]
    extra = ["--counters", str(counters)] if counters is not None else []
    return [str(python), *[a.format(package=package) for a in prefix], *extra, *rest]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a run: this one without PYTHONPATH and cryptoffload's own settings (a
    policy file of the caller's would make the runs another experiment), plus ``extra``."""
    own = ("PYTHONPATH",)
    env = {k: v for k, v in os.environ.items() if k not in own and "CRYPTOFFLOAD" not in k}
    env.update(extra)
    return env


@dataclasses.dataclass
class Run:
    """What one run left: per-test outcomes, collection errors, counters, exit and wall time."""

    config: str
    tests: dict[str, dict[str, str]]
    collect_errors: dict[str, str]
    counters: dict[str, Any] | None
    returncode: int | None  # None: stopped at the timeout
    wall: float
    log: str = ""
    #: Whether cryptoffload was loaded in the run (None: unknown, the run ended early).
    loaded: bool | None = None

    @property
    def misrun(self) -> str:
        """What is wrong with the run itself, or "": the baseline had cryptoffload in it, or
        an offloaded run had not (the hook was not there)."""
        if self.config == "cryptography" and self.loaded:
            return "cryptoffload was loaded in the baseline run"
        if self.config != "cryptography" and self.loaded is False:
            return "cryptoffload was never loaded: the hook was not in place"
        return ""

    @property
    def ops_rows(self) -> list[dict[str, Any]]:
        return ops_by_algorithm(self.counters)

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": counts(self.tests),
            "collect_errors": self.collect_errors,
            "ops": self.ops_rows,
            "counters": self.counters,
            "returncode": self.returncode,
            "cryptoffload_loaded": self.loaded,
            "timed_out": self.returncode is None,
            "wall": round(self.wall, 2),
        }


def execute(
    cmd: list,
    cwd: pathlib.Path,
    env: dict,
    log_path: pathlib.Path,
    timeout: float,
    progress: Any = None,
) -> tuple[int | None, float]:
    """Run ``cmd`` in its own process group, output to ``log_path``; (exit code or None on
    timeout, wall seconds). ``progress(seconds)`` is called every PROGRESS seconds while it
    runs. At the timeout the whole group is stopped (threads a suite left behind, children a
    test started)."""
    start = time.monotonic()
    code: int | None = None
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        while code is None:
            elapsed = time.monotonic() - start
            if elapsed >= timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            try:
                code = proc.wait(timeout=min(PROGRESS, timeout - elapsed))
            except subprocess.TimeoutExpired:
                if progress is not None and time.monotonic() - start < timeout:
                    progress(time.monotonic() - start)
    return code, time.monotonic() - start


def run_suite(
    python: pathlib.Path,
    suite: Suite,
    sdist: pathlib.Path,
    config: str,
    work: pathlib.Path,
    timeout: float,
    log: Any = None,
) -> Run:
    """One run of ``suite``'s tests under ``config``, in a fresh copy of them; ``log`` gets a
    line of progress now and then (the tests done so far)."""
    root = extract(sdist, suite.extract, work / config)
    out = work / f"{config}.jsonl"
    counters = work / f"{config}.counters.json" if CONFIGS[config] else None
    env = child_env(
        PYTHONPATH=str(HERE),
        CRYPTOFFLOAD_APPS_OUT=str(out),
        CRYPTOFFLOAD_APPS_DESELECT=json.dumps(sorted(suite.deselect)),
    )
    pytest_args = ["-m", "pytest", "-p", "apps_plugin", "-p", "no:cacheprovider", "-q"]
    for plugin in sorted({p for s in SUITES.values() for p in s.plugins} - set(suite.plugins)):
        pytest_args += ["-p", f"no:{plugin}"]
    pytest_args += ["--tb=short", *suite.args]
    cmd = command(python, config, counters, *pytest_args, package=suite.package)
    log_path = work / f"{config}.log"

    def progress(seconds: float) -> None:
        if log is not None:
            done = len(read_results(out)[0])
            log(f"{root.parent.parent.name}: {config} {done} tests done in {seconds:.0f}s")

    code, wall = execute(cmd, root, env, log_path, timeout, progress)
    tests, errors, loaded = read_results(out)
    return Run(config, tests, errors, read_counters(counters), code, wall, str(log_path), loaded)


def read_results(
    path: pathlib.Path,
) -> tuple[dict[str, dict[str, str]], dict[str, str], bool | None]:
    """The plugin's JSON lines: (per test id its outcome and message, collection errors, and
    whether the run had cryptoffload loaded: None when it did not get as far as saying)."""
    tests: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    loaded = None
    if not path.exists():
        return tests, errors, loaded
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # the line being written while a run is watched
            continue
        if "collect_error" in record:
            errors[record["collect_error"]] = record["message"]
        elif "cryptoffload_loaded" in record:
            loaded = record["cryptoffload_loaded"]
        else:
            tests[record.pop("nodeid")] = record
    return tests, errors, loaded


def read_counters(path: pathlib.Path | None) -> dict[str, Any] | None:
    """The engines' counters a run wrote, as ``{engine: {algorithm: cell}}``, or None.

    ``--counters`` writes ``engines --json``'s rows, each with its ``counters``; a mapping of
    engine name to counters (``counters.snapshot()``'s shape) is taken as it is.
    """
    if path is None or not path.exists():
        return None
    engines = json.loads(path.read_text()).get("engines", {})
    if isinstance(engines, list):
        return {row["name"]: row.get("counters", {}) for row in engines}
    return engines


# -- comparing and printing -----------------------------------------------------------------------


def counts(tests: dict[str, dict[str, str]]) -> dict[str, int]:
    """passed/failed/skipped over a run's tests (an expected failure counts as skipped)."""
    out = {"passed": 0, "failed": 0, "skipped": 0}
    for entry in tests.values():
        outcome = entry["outcome"]
        out["skipped" if outcome == "xfailed" else outcome] += 1
    return out


def differences(base: dict, other: dict) -> list[tuple[str, str, str, str]]:
    """(test id, outcome on cryptography, outcome here, first error line) where they differ; a
    test one run did not reach (it hung or died first) is 'absent'."""
    found = []
    for nodeid in sorted(set(base) | set(other)):
        a = base.get(nodeid, {}).get("outcome", "absent")
        b = other.get(nodeid, {}).get("outcome", "absent")
        if a != b:
            found.append((nodeid, a, b, other.get(nodeid, {}).get("message", "")))
    return found


def ops_by_algorithm(counters: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every (engine, algorithm) with ops, declines or faults, the most ops first."""
    rows = []
    for engine, algs in (counters or {}).items():
        for alg, cell in algs.items():
            declined = sum(cell.get("declined", {}).values())
            if cell.get("ops") or declined or cell.get("faults"):
                rows.append(
                    {
                        "engine": engine,
                        "algorithm": alg,
                        "ops": cell.get("ops", 0),
                        "bytes": cell.get("bytes", 0),
                        "declined": cell.get("declined", {}),
                        "faults": cell.get("faults", 0),
                    }
                )
    rows.sort(key=lambda r: (-r["ops"], r["engine"], r["algorithm"]))
    return rows


def ops_line(rows: list[dict[str, Any]], top: int = 8) -> str:
    """``algorithm x ops (engine)`` for the ``top`` entries, then the total."""
    if not rows:
        return "none"
    total = sum(r["ops"] for r in rows)
    parts = [f"{r['algorithm']} x{r['ops']} ({r['engine']})" for r in rows[:top] if r["ops"]]
    more = len([r for r in rows if r["ops"]]) - len(parts)
    text = ", ".join(parts) + (f", {more} more" if more > 0 else "")
    declined: dict[str, int] = {}
    for r in rows:
        for reason, n in r["declined"].items():
            declined[reason] = declined.get(reason, 0) + n
    faults = sum(r["faults"] for r in rows)
    text = f"{total} ops: {text}"
    if declined:
        text += "; declined: " + ", ".join(f"{k} x{v}" for k, v in sorted(declined.items()))
    if faults:
        text += f"; faults: {faults}"
    return text


def _cell(run: Run) -> str:
    c = counts(run.tests)
    text = f"{c['passed']}/{c['failed']}/{c['skipped']}"
    if run.returncode is None:
        text += " TIMEOUT"
    elif run.collect_errors:
        text += f" +{len(run.collect_errors)}E"
    return text


def format_table(results: dict[str, dict[str, Run]]) -> str:
    """Per suite, passed/failed/skipped and the wall time of each configuration side by side,
    and whether each offloaded run has the baseline's outcome for every test."""
    present = {config for runs in results.values() for config in runs}
    configs = [config for config in CONFIGS if config in present]
    head = f"{'suite':<10}"
    for config in configs:
        head += f" | {config + ' p/f/s':>19} {'wall':>7}"
        if config != "cryptography":
            head += f" {'same':>4}"
    lines = [head, "-" * len(head)]
    for name, runs in results.items():
        line = f"{name:<10}"
        base = runs.get("cryptography")
        for config in configs:
            run = runs.get(config)
            if run is None:
                line += f" | {'-':>19} {'-':>7}" + ("" if config == "cryptography" else "    -")
                continue
            line += f" | {_cell(run):>19} {run.wall:>6.1f}s"
            if config != "cryptography":
                same = base is not None and not differences(base.tests, run.tests)
                line += f" {'yes' if same else 'NO':>4}"
        lines.append(line)
    return "\n".join(lines)


def report(results: dict[str, dict[str, Run]], verbose: bool) -> str:
    """The table, then per suite the ops counted and the tests that differ."""
    out = [format_table(results)]
    for name, runs in results.items():
        suite = SUITES[name]
        out.append(f"\n{name} {suite.version}:")
        for config, run in runs.items():
            if run.counters is not None:
                out.append(f"  ops counted ({config}): {ops_line(run.ops_rows)}")
            for nodeid, message in run.collect_errors.items():
                out.append(f"  {config}: {nodeid} does not import: {message}")
            if run.returncode is None:
                out.append(f"  {config}: stopped at the timeout (log: {run.log})")
            if run.misrun:
                out.append(f"  {config}: {run.misrun}")
        base = runs.get("cryptography")
        if base is not None:
            failing = [(k, v) for k, v in sorted(base.tests.items()) if v["outcome"] == "failed"]
            if failing:
                out.append(f"  failing on cryptography itself ({len(failing)}):")
                for nodeid, entry in failing:
                    out.append(f"    {nodeid}: {entry.get('message', '')[:160]}")
        for config, run in runs.items():
            if base is None or config == "cryptography":
                continue
            found = differences(base.tests, run.tests)
            if not found:
                continue
            out.append(f"  {config}: {len(found)} tests differ from cryptography")
            for nodeid, a, b, message in found if verbose else found[:25]:
                out.append(f"    {nodeid}: {a} -> {b}  {message[:160]}".rstrip())
            if not verbose and len(found) > 25:
                out.append(f"    ... {len(found) - 25} more (-v lists them all)")
        if suite.deselect:
            out.append(f"  deselected in every run ({len(suite.deselect)}):")
            for pattern, reason in suite.deselect.items():
                out.append(f"    {pattern}: {reason}")
    return "\n".join(out)


# -- the end-to-end scripts -----------------------------------------------------------------------


def run_e2e(
    python: pathlib.Path, script: str, config: str, work: pathlib.Path, timeout: float
) -> dict[str, Any]:
    """One of the e2e scripts under ``config``: its output, exit, wall time and counters."""
    counters = work / f"{script}.{config}.counters.json" if CONFIGS[config] else None
    log_path = work / f"{script}.{config}.log"
    cmd = command(python, config, counters, str(HERE / f"{script}.py"), package=E2E[script])
    code, wall = execute(cmd, work, child_env(), log_path, timeout)
    output = log_path.read_text(encoding="utf-8", errors="replace")
    ops = ops_by_algorithm(read_counters(counters))
    return {"returncode": code, "wall": round(wall, 2), "output": output, "ops": ops}


# -- main -----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--suites", help=f"comma-separated (default: {','.join(SUITES)})")
    parser.add_argument(
        "--configs",
        help=f"comma-separated, of {','.join(CONFIGS)} (default: {','.join(DEFAULT_CONFIGS)})",
    )
    parser.add_argument("--e2e", action="store_true", help="also run the end-to-end scripts")
    parser.add_argument("--e2e-only", action="store_true", help="only the end-to-end scripts")
    parser.add_argument("--venv", type=pathlib.Path, default=VENV, help=f"default: {VENV}")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every difference")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    names = [s.strip().lower() for s in args.suites.split(",")] if args.suites else list(SUITES)
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; choose from {', '.join(SUITES)}")
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else []
    configs = configs or list(DEFAULT_CONFIGS)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or "cryptography" not in configs:
        parser.error(f"configurations are {', '.join(CONFIGS)}, cryptography among them")
    # An end-to-end script runs beside its application's suite (all of them unless --suites).
    scripts = [s for s in E2E if E2E[s] in names] if args.e2e or args.e2e_only else []
    installed = sorted({*names, *(E2E[s] for s in scripts)})
    if args.e2e_only:
        names = []

    started = time.monotonic()

    def log(text: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {text}", file=sys.stderr, flush=True)

    python = ensure_venv(args.venv.expanduser().resolve(), log, installed)
    work = pathlib.Path(tempfile.mkdtemp(prefix="apps-suite-"))
    results: dict[str, dict[str, Run]] = {}
    e2e: dict[str, dict[str, Any]] = {}
    try:
        for name in names:
            suite = SUITES[name]
            sdist = fetch_sdist(suite.project, suite.sdist)
            results[name] = {}
            for config in configs:
                log(f"{name} {suite.version}: {config} ...")
                run = run_suite(python, suite, sdist, config, work / name, args.timeout, log)
                results[name][config] = run
                c = counts(run.tests)
                status = "timed out" if run.returncode is None else f"exit {run.returncode}"
                log(
                    f"{name}: {config} {c['passed']} passed, {c['failed']} failed, "
                    f"{c['skipped']} skipped in {run.wall:.1f}s ({status})"
                )
        if scripts:
            (work / "e2e").mkdir(exist_ok=True)
            for script in scripts:
                e2e[script] = {}
                for config in configs:
                    log(f"{script}: {config} ...")
                    done = run_e2e(python, script, config, work / "e2e", args.timeout)
                    e2e[script][config] = done
                    log(f"{script}: {config} exit {done['returncode']} in {done['wall']:.1f}s")
    finally:
        if args.keep:
            print(f"work directory: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    wall = time.monotonic() - started

    if args.json:
        json.dump(
            {
                "versions": {n: SUITES[n].version for n in SUITES},
                "requirements": requirements(installed),
                "suites": {
                    name: {
                        "runs": {c: r.as_dict() for c, r in runs.items()},
                        "differences": {
                            c: [list(d) for d in differences(runs["cryptography"].tests, r.tests)]
                            for c, r in runs.items()
                            if c != "cryptography"
                        },
                        "deselected": SUITES[name].deselect,
                    }
                    for name, runs in results.items()
                },
                "e2e": e2e,
                "wall": round(wall, 2),
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        reqs = ", ".join(requirements(installed))
        print(f"applications' own suites, passed/failed/skipped ({reqs})")
        print()
        if results:
            print(report(results, args.verbose))
        for script, runs in e2e.items():
            print(f"\n{script}:")
            for config, done in runs.items():
                print(f"  {config}: exit {done['returncode']} in {done['wall']:.1f}s")
                for line in done["output"].strip().splitlines():
                    print(f"    {line}")
                if CONFIGS[config]:
                    print(f"    ops counted (--counters): {ops_line(done['ops'])}")
        print(f"\nwall time: {wall:.1f}s")
    return exit_status(results, e2e)


def exit_status(results: dict[str, dict[str, Run]], e2e: dict[str, dict[str, Any]]) -> int:
    """1 when a run stopped at its timeout, an offloaded run's outcomes differ from the
    baseline's, the baseline itself failed a test, or an e2e script failed; else 0."""
    for runs in results.values():
        base = runs.get("cryptography")
        for config, run in runs.items():
            if run.returncode is None or run.collect_errors or run.misrun:
                return 1
            if config == "cryptography" and counts(run.tests)["failed"]:
                return 1
            if base is not None and differences(base.tests, run.tests):
                return 1
    if any(d["returncode"] != 0 for runs in e2e.values() for d in runs.values()):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
