"""pytest plugin the compatibility runner loads into pyca's suite: the provider, ops per test."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import pytest

#: Which provider the run installs: ``cryptography`` (none: the unrewritten suite), ``default``
#: (the process default, built from the engines found) or ``engine`` (a pass-through engine).
CONFIG = os.environ.get("CRYPTOFFLOAD_COMPAT_CONFIG", "cryptography")
#: Where the results go (JSON: per test id, its outcome and the ops cryptoffload counted).
OUT = os.environ.get("CRYPTOFFLOAD_COMPAT_OUT", "")


def _provider() -> Any:
    from cryptoffload.core.lane import current

    return current()


def _ops() -> tuple[int, int]:
    """(every op counted by the provider in force, those an engine other than software did)."""
    total = engine = 0
    for name, algs in _provider().counters.snapshot().items():
        for cell in algs.values():
            total += cell["ops"]
            if name != "software":
                engine += cell["ops"]
    return total, engine


class _Reach:
    """Whether a test ran any of cryptoffload's own code: a profile hook that looks for a call
    into the package and removes itself at the first (so the rest of the test runs unwatched)."""

    def __init__(self) -> None:
        import cryptoffload

        self._package = os.path.dirname(cryptoffload.__file__) + os.sep
        self.reached = False

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(self._package):
            self.reached = True
            sys.setprofile(None)

    def __enter__(self) -> _Reach:
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)


_results: dict[str, dict[str, Any]] = {}
_collect_errors: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    if CONFIG == "cryptography":
        return
    from cryptoffload import Policy, Provider, set_default_provider

    if CONFIG == "engine":
        from cryptoffload.engines.passthrough import PassThroughEngine

        provider = Provider([PassThroughEngine()], policy=Policy(min_size={"*": 0}))
        set_default_provider(provider)
    else:
        set_default_provider(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Any:
    if CONFIG == "cryptography":
        return (yield)
    before = _ops()
    reach = _Reach()
    try:
        with reach:
            return (yield)
    finally:
        after = _ops()
        entry = _results.setdefault(item.nodeid, {"outcome": "passed"})
        entry["ops"] = after[0] - before[0]
        entry["engine_ops"] = after[1] - before[1]
        entry["reached"] = reach.reached


#: A test that could not run: a vector file its `cryptography` release reads is missing from
#: the installed cryptography_vectors (an older release: the index may not serve the new one yet).
_MISSING_VECTOR = re.compile(
    r"FileNotFoundError: .*'[^']*cryptography_vectors[/\\](?P<file>[^']+)'"
)


def missing_vector(message: str) -> str | None:
    """The vector file (relative to cryptography_vectors) a failure's message says is missing."""
    found = _MISSING_VECTOR.search(message)
    return found.group("file").replace("\\", "/") if found else None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _results.setdefault(report.nodeid, {"outcome": "passed"})
    if report.failed:
        message = _first_line(report)
        missing = missing_vector(message)
        if missing is not None and entry["outcome"] != "failed":
            entry["outcome"] = "unrunnable"
            entry["missing"] = missing
        else:
            entry["outcome"] = "failed"
            entry.pop("missing", None)
        if "message" not in entry:
            entry["message"] = message
    elif report.skipped and entry["outcome"] != "failed":
        entry["outcome"] = "skipped"
        if hasattr(report, "wasxfail"):
            entry["outcome"] = "xfailed"


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _collect_errors[report.nodeid] = _first_line(report)


def _first_line(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message).splitlines()[0][:300] if crash.message else ""
    text = str(report.longrepr).strip().splitlines()
    return text[-1][:300] if text else ""


def pytest_sessionfinish(session: pytest.Session) -> None:
    if OUT:
        with open(OUT, "w", encoding="utf-8") as f:
            json.dump({"tests": _results, "collect_errors": _collect_errors}, f)
