"""pytest plugin the applications runner (apps.py) loads into each application's own suite.

It records each test's outcome and first error line, one JSON line per test as it finishes (a run
that hangs or dies still leaves the tests it got through), and leaves out the tests the runner's
deselect list names. It imports nothing of cryptoffload: the baseline run must not load it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from typing import Any

import pytest

#: Where the results go: JSON lines, {"nodeid", "outcome", "message"} per test,
#: {"collect_error": nodeid, "message"} per file that did not import, and at the end
#: {"cryptoffload_loaded": bool}: whether the run had cryptoffload in it (the baseline must not).
OUT = os.environ.get("CRYPTOFFLOAD_APPS_OUT", "")
#: fnmatch patterns over node ids (JSON list) of the tests left out, the same in every run.
DESELECT = json.loads(os.environ.get("CRYPTOFFLOAD_APPS_DESELECT", "[]"))

_outcomes: dict[str, dict[str, str]] = {}


def _write(record: dict[str, Any]) -> None:
    if OUT:
        with open(OUT, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def deselected(nodeid: str, patterns: list[str]) -> bool:
    """Whether a pattern names ``nodeid``, or the test ``nodeid`` is a parameter case of."""
    return any(
        fnmatch.fnmatchcase(nodeid, p) or fnmatch.fnmatchcase(nodeid, p + "[[]*") for p in patterns
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not DESELECT:
        return
    keep, drop = [], []
    for item in items:
        (drop if deselected(item.nodeid, DESELECT) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _outcomes.setdefault(report.nodeid, {"outcome": "passed"})
    if report.failed:
        if entry["outcome"] != "failed":
            entry["message"] = f"{report.when}: {first_line(report)}"
        entry["outcome"] = "failed"
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        if not hasattr(report, "wasxfail"):
            entry["message"] = first_line(report)
    if report.when == "teardown":
        _write({"nodeid": report.nodeid, **_outcomes.pop(report.nodeid)})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _write({"collect_error": report.nodeid, "message": first_line(report)})


def first_line(report: Any) -> str:
    """The first line of a report's error (the exception and its message), or of a skip reason."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        return str(longrepr[-1]).removeprefix("Skipped: ")[:300]
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        return str(crash.message).strip().splitlines()[0][:300]
    text = str(longrepr).strip().splitlines()
    return text[-1][:300] if text else ""


def pytest_sessionfinish(session: pytest.Session) -> None:
    _write({"cryptoffload_loaded": "cryptoffload" in sys.modules})
