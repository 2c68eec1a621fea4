"""`cryptoffload.tools.install`: the counters file the processes of one run add into."""

from __future__ import annotations

import json

import pytest

import cryptoffload
from cryptoffload import Provider
from cryptoffload.tools.install import check_counters_path, write_counters


@pytest.fixture
def software_only():
    cryptoffload.set_default_provider(Provider([]))
    yield
    cryptoffload.set_default_provider(None)


@pytest.mark.parametrize("left", ["[1, 2]\n", '"text"\n', "{not json"])
def test_a_file_that_is_not_counters_is_replaced_at_write_not_merged(tmp_path, software_only, left):
    path = tmp_path / "c.json"
    path.write_text(left)
    write_counters(path, "run-1", exit_status=0)
    report = json.loads(path.read_text())
    assert report["run"] == "run-1" and report["processes"] == 1


def test_the_processes_of_one_run_add_up_and_another_runs_file_is_replaced(tmp_path, software_only):
    path = tmp_path / "c.json"
    write_counters(path, "run-1")
    write_counters(path, "run-1")
    assert json.loads(path.read_text())["processes"] == 2
    check_counters_path(path)  # an earlier run's file: taken, to be replaced
    write_counters(path, "run-2")
    assert json.loads(path.read_text())["processes"] == 1


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"notes\n", "not JSON"),
        (b"\xff\xfe\x00", "not JSON"),
        (b'{"run": "r", "processes": 1}', "JSON without the run, processes and engines"),
    ],
)
def test_a_path_holding_something_else_is_refused_naming_why(tmp_path, content, why):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"--counters {path}: not a counters file \\({why}"):
        check_counters_path(path)


def test_a_new_or_empty_file_is_taken(tmp_path):
    check_counters_path(tmp_path / "new.json")
    (tmp_path / "empty.json").write_text("\n")
    check_counters_path(tmp_path / "empty.json")
