"""compat/apps.py's own logic, on small fixed inputs (no venv, no network, no suite run)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import pytest

COMPAT = pathlib.Path(__file__).resolve().parent.parent / "compat"
if str(COMPAT) not in sys.path:  # the runners import their shared modules (sdist.py) from there
    sys.path.insert(0, str(COMPAT))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"compat_{name}", COMPAT / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


apps = _load("apps")
plugin = _load("apps_plugin")

BASE = {
    "t.py::test_a": {"outcome": "passed"},
    "t.py::test_b": {"outcome": "passed"},
    "t.py::test_c": {"outcome": "skipped", "message": "needs a locale"},
    "t.py::test_d": {"outcome": "xfailed"},
    "t.py::test_e": {"outcome": "passed"},
}
OFFLOADED = {
    "t.py::test_a": {"outcome": "passed"},
    "t.py::test_b": {"outcome": "failed", "message": "call: TypeError: not a key"},
    "t.py::test_c": {"outcome": "skipped", "message": "needs a locale"},
    "t.py::test_d": {"outcome": "xfailed"},
    # test_e never ran (the run hung before it)
}
COUNTERS = {
    "passthrough": {
        "aes-128-gcm": {"ops": 40, "bytes": 4096, "declined": {}, "faults": 0},
        "x25519": {"ops": 2, "bytes": 64, "declined": {}, "faults": 0},
        "sha256": {"ops": 0, "bytes": 0, "declined": {}, "faults": 0},
    },
    "software": {
        "aes-256-ecb": {"ops": 7, "bytes": 112, "declined": {}, "faults": 0},
        "rsa-2048-private": {"ops": 0, "bytes": 0, "declined": {"below-threshold": 3}, "faults": 1},
    },
}


def _run(config, tests, code=0, wall=1.0, counters=None, errors=None):
    return apps.Run(config, tests, errors or {}, counters, code, wall)


def test_counts_take_an_expected_failure_as_skipped():
    assert apps.counts(BASE) == {"passed": 3, "failed": 0, "skipped": 2}
    assert apps.counts(OFFLOADED) == {"passed": 1, "failed": 1, "skipped": 2}


def test_differences_name_each_changed_or_missing_test_with_its_first_error_line():
    found = apps.differences(BASE, OFFLOADED)
    assert found == [
        ("t.py::test_b", "passed", "failed", "call: TypeError: not a key"),
        ("t.py::test_e", "passed", "absent", ""),
    ]
    assert apps.differences(BASE, BASE) == []
    # A test only the offloaded run has is a difference too.
    extra = {**BASE, "t.py::test_f": {"outcome": "failed", "message": "boom"}}
    assert apps.differences(BASE, extra) == [("t.py::test_f", "absent", "failed", "boom")]


def test_ops_by_algorithm_most_ops_first_and_drops_untouched_cells():
    rows = apps.ops_by_algorithm(COUNTERS)
    assert [(r["engine"], r["algorithm"], r["ops"]) for r in rows] == [
        ("passthrough", "aes-128-gcm", 40),
        ("software", "aes-256-ecb", 7),
        ("passthrough", "x25519", 2),
        ("software", "rsa-2048-private", 0),
    ]
    assert apps.ops_by_algorithm(None) == []


def test_ops_line_totals_top_entries_declines_and_faults():
    line = apps.ops_line(apps.ops_by_algorithm(COUNTERS), top=2)
    assert line == (
        "49 ops: aes-128-gcm x40 (passthrough), aes-256-ecb x7 (software), 1 more; "
        "declined: below-threshold x3; faults: 1"
    )
    assert apps.ops_line([]) == "none"


def test_read_counters_takes_runs_rows_and_a_plain_snapshot(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text(
        json.dumps(
            {
                "run": "x",
                "processes": 2,
                "engines": [
                    {"name": "passthrough", "available": True, "counters": COUNTERS["passthrough"]},
                    {"name": "software", "counters": COUNTERS["software"]},
                ],
            }
        )
    )
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"engines": COUNTERS}))
    assert apps.read_counters(rows) == COUNTERS
    assert apps.read_counters(plain) == COUNTERS
    assert apps.read_counters(tmp_path / "absent.json") is None
    assert apps.read_counters(None) is None


def test_table_shows_each_configuration_side_by_side_and_whether_it_matches():
    results = {
        "pyjwt": {
            "cryptography": _run("cryptography", BASE, wall=6.25),
            "default": _run("default", dict(BASE), wall=7.5),
            "passthrough": _run("passthrough", OFFLOADED, code=None, wall=1800.0),
        }
    }
    lines = apps.format_table(results).splitlines()
    assert lines[0].split("|")[0].strip() == "suite"
    row = [cell.split() for cell in lines[2].split("|")]
    assert row == [
        ["pyjwt"],
        ["3/0/2", "6.2s"],
        ["3/0/2", "7.5s", "yes"],
        ["1/1/2", "TIMEOUT", "1800.0s", "NO"],
    ]


def test_report_lists_differences_and_baseline_failures():
    failing = {**BASE, "t.py::test_e": {"outcome": "failed", "message": "call: flaky here"}}
    results = {
        "pyjwt": {
            "cryptography": _run("cryptography", failing),
            "default": _run("default", OFFLOADED, counters=COUNTERS),
        }
    }
    text = apps.report(results, verbose=True)
    assert "failing on cryptography itself (1):" in text
    assert "t.py::test_e: call: flaky here" in text
    assert "default: 2 tests differ from cryptography" in text
    assert "t.py::test_e: failed -> absent\n" in text + "\n"
    assert "t.py::test_b: passed -> failed  call: TypeError: not a key" in text
    assert "ops counted (default): 49 ops:" in text


def test_commands_put_cryptoffload_run_before_pytest_only_when_offloaded(tmp_path):
    py, out = tmp_path / "python", tmp_path / "c.json"
    assert apps.command(py, "cryptography", None, "-m", "pytest", "tests") == [
        str(py),
        "-m",
        "pytest",
        "tests",
    ]
    assert apps.command(py, "passthrough", out, "-m", "pytest") == [
        str(py),
        *("-m", "cryptoffload", "run", "--engines", "passthrough"),
        *("--counters", str(out), "-m", "pytest"),
    ]
    assert apps.command(py, "only", out, "x.py", package="jwt") == [
        str(py),
        *("-m", "cryptoffload", "run", "--engines", "passthrough", "--only", "jwt"),
        *("--counters", str(out), "x.py"),
    ]


def test_table_has_a_column_for_each_configuration_run_and_no_other():
    results = {"aioquic": {c: _run(c, BASE) for c in ("cryptography", "only")}}
    head = apps.format_table(results).splitlines()[0]
    assert [cell.split()[0] for cell in head.split("|")] == ["suite", "cryptography", "only"]


def test_child_environment_drops_the_callers_cryptoffload_settings(monkeypatch):
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", "/somewhere/policy.toml")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/src")
    env = apps.child_env(PYTHONPATH="/compat")
    assert "CRYPTOFFLOAD_POLICY" not in env
    assert env["PYTHONPATH"] == "/compat"


@pytest.mark.parametrize(
    ("nodeid", "left_out"),
    [
        ("tests/test_client.py::SSHClientTest::test_banner_timeout", True),
        ("tests/test_client.py::SSHClientTest::test_banner_timeout[x]", True),
        ("tests/test_client.py::SSHClientTest::test_banner_timeout_more", False),
        ("tests/test_transport.py::test_other", False),
    ],
)
def test_plugin_deselects_by_pattern_and_parameter_case(nodeid, left_out):
    patterns = ["tests/test_client.py::SSHClientTest::test_banner_timeout"]
    assert plugin.deselected(nodeid, patterns) is left_out


def test_every_deselected_test_has_a_reason():
    for suite in apps.SUITES.values():
        for pattern, reason in suite.deselect.items():
            assert pattern.startswith("tests/") and len(reason) > 20, (pattern, reason)


def test_execute_stops_a_run_at_its_timeout_and_reports_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(apps, "PROGRESS", 0.2)
    seen = []
    code, wall = apps.execute(
        [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"],
        tmp_path,
        dict(apps.os.environ),
        tmp_path / "log",
        timeout=1.0,
        progress=seen.append,
    )
    assert code is None and 1.0 <= wall < 10
    assert seen and all(0 < s < 1.0 for s in seen)
    assert (tmp_path / "log").read_text() == "started\n"
    code, _ = apps.execute(
        [sys.executable, "-c", "raise SystemExit(3)"], tmp_path, {}, tmp_path / "log2", 30
    )
    assert code == 3


def test_read_results_skips_a_line_still_being_written(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text(
        '{"nodeid": "t.py::a", "outcome": "passed"}\n'
        '{"collect_error": "t2.py", "message": "ImportError: x"}\n'
        '{"nodeid": "t.py::b", "outc'
    )
    tests, errors, loaded = apps.read_results(out)
    assert tests == {"t.py::a": {"outcome": "passed"}}
    assert errors == {"t2.py": "ImportError: x"}
    assert loaded is None
    out.write_text('{"nodeid": "t.py::a", "outcome": "passed"}\n{"cryptoffload_loaded": true}\n')
    assert apps.read_results(out)[2] is True


def test_a_baseline_with_cryptoffload_in_it_or_an_offloaded_run_without_is_a_failure():
    base = _run("cryptography", BASE)
    base.loaded = True
    assert "baseline" in base.misrun
    assert apps.exit_status({"pyjwt": {"cryptography": base}}, {}) == 1
    hookless = _run("default", BASE)
    hookless.loaded = False
    assert "hook" in hookless.misrun
    base.loaded = False
    assert base.misrun == ""
    assert apps.exit_status({"pyjwt": {"cryptography": base, "default": hookless}}, {}) == 1
    hookless.loaded = True
    assert apps.exit_status({"pyjwt": {"cryptography": base, "default": hookless}}, {}) == 0


def test_exit_status_fails_on_a_difference_a_timeout_a_baseline_failure_or_an_e2e_failure():
    same = {"cryptography": _run("cryptography", BASE), "default": _run("default", BASE)}
    assert apps.exit_status({"pyjwt": same}, {}) == 0
    differs = {**same, "passthrough": _run("passthrough", OFFLOADED)}
    assert apps.exit_status({"pyjwt": differs}, {}) == 1
    stopped = {**same, "default": _run("default", BASE, code=None)}
    assert apps.exit_status({"pyjwt": stopped}, {}) == 1
    failing = {**BASE, "t.py::test_e": {"outcome": "failed", "message": "x"}}
    assert apps.exit_status({"pyjwt": {"cryptography": _run("cryptography", failing)}}, {}) == 1
    e2e = {"e2e_paramiko": {"default": {"returncode": 1}}}
    assert apps.exit_status({"pyjwt": same}, e2e) == 1
