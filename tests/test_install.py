"""`cryptoffload.tools.install`: the counters file the processes of one run add into; what
`run`'s install builds at start-up and what it leaves to the program's first need."""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json

import pytest
from doubles import TakeAllEngine

import cryptoffload
import cryptoffload.engines
from cryptoffload import Provider
from cryptoffload.tools.install import (
    check_counters_path,
    child_environment,
    install_for_run,
    uninstall,
    write_counters,
)


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


def app_imports(source: str) -> dict:
    """The namespace of ``source`` run as the module ``someapp`` (a redirected importer)."""
    namespace = {"__name__": "someapp", "__builtins__": builtins}
    exec(compile(source, "<someapp>", "exec"), namespace)
    return namespace


@pytest.fixture
def engines_found(monkeypatch):
    """The engines the default provider finds: one that claims every algorithm; the list of
    the times they were looked for (each a provider built)."""
    built = []

    def discover():
        built.append(len(built) + 1)
        return [TakeAllEngine()]

    monkeypatch.setattr(cryptoffload.engines, "discover", discover)
    monkeypatch.setattr(cryptoffload.engines, "may_discover_any", lambda: True)
    cryptoffload.set_default_provider(None)
    try:
        yield built
    finally:
        uninstall()
        cryptoffload.set_default_provider(None)


def test_run_builds_the_provider_at_the_programs_first_import_of_hashlib(engines_found):
    install_for_run()
    assert engines_found == []  # nothing probed at start-up
    ns = app_imports("import hashlib, hmac\nfrom hashlib import sha256")
    assert engines_found == [1]
    assert ns["hashlib"] is not hashlib and ns["hmac"] is not hmac
    assert ns["sha256"] is ns["hashlib"].sha256 is not hashlib.sha256
    assert ns["hashlib"].sha256(b"abc").digest() == hashlib.sha256(b"abc").digest()
    assert cryptoffload.current().counters.snapshot()["takeall"]["sha256"]["ops"] == 1
    assert app_imports("import hashlib")["hashlib"] is ns["hashlib"]  # decided once
    assert engines_found == [1]


def test_run_builds_the_provider_at_the_programs_first_operation(engines_found):
    install_for_run()
    from cryptoffload.hashes import SHA256, Hash

    assert engines_found == []
    Hash(SHA256()).finalize()
    assert engines_found == [1]
    assert cryptoffload.current().counters.snapshot()["takeall"]["sha256"]["ops"] == 1
    app_imports("import hashlib")
    assert engines_found == [1]  # the views are decided from the provider the op built


def test_run_with_engines_builds_the_provider_of_them_at_the_first_need(engines_found):
    import cryptoffload.core.lane

    install_for_run(["software"])
    assert cryptoffload.core.lane.DEFAULT_BOX[0] is None  # nothing built at start-up
    ns = app_imports("import hashlib, hmac")
    assert ns["hashlib"] is hashlib and ns["hmac"] is hmac  # software claims none: Python's
    assert cryptoffload.core.lane.DEFAULT_BOX[0] is None  # ... decided without building it
    assert [e.name for e in cryptoffload.current().engines] == ["software"]
    assert engines_found == []


def test_run_with_an_engine_that_claims_hashes_decides_the_views_from_it(engines_found):
    install_for_run(["passthrough"])
    ns = app_imports("import hashlib, hmac")
    assert ns["hashlib"] is not hashlib and ns["hmac"] is not hmac
    assert ns["hashlib"].sha256(b"abc").digest() == hashlib.sha256(b"abc").digest()
    provider = cryptoffload.current()
    assert [e.name for e in provider.engines] == ["passthrough", "software"]
    assert provider.counters.snapshot()["passthrough"]["sha256"]["ops"] == 1
    assert engines_found == []


def test_run_with_engines_replaces_a_default_provider_built_before(engines_found):
    cryptoffload.current()
    assert engines_found == [1]
    install_for_run(["passthrough"])
    assert [e.name for e in cryptoffload.current().engines] == ["passthrough", "software"]
    cryptoffload.set_default_provider(None)  # from the machine again, as it says
    assert [e.name for e in cryptoffload.current().engines] == ["takeall", "software"]


def test_run_refuses_an_engine_named_twice_before_the_program_starts(engines_found):
    with pytest.raises(ValueError) as refused:
        install_for_run(["passthrough", "software", "passthrough"])
    with pytest.raises(ValueError) as by_the_provider:
        Provider(["passthrough", "passthrough"])
    assert (
        str(refused.value) == str(by_the_provider.value) == ("engine 'passthrough' is listed twice")
    )


def test_run_refuses_a_bad_engine_spec_or_policy_before_the_program_starts(tmp_path, monkeypatch):
    with pytest.raises(cryptoffload.UnknownEngine, match="unknown engine 'nosuch'"):
        install_for_run(["nosuch"])
    bad = tmp_path / "policy.toml"
    bad.write_text("[nosuch\n")
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(bad))
    with pytest.raises(ValueError, match="CRYPTOFFLOAD_POLICY"):
        install_for_run()
    uninstall()


@pytest.mark.parametrize(
    "paths",
    [("/srv/app c.json", None), ('/tmp/\u00e9t\u00e9 "q" \\ \n\u2028.json', "/p\udcff.toml")],
    ids=["plain", "quotes, escapes, unicode and an undecodable byte"],
)
def test_the_settings_a_child_reads_are_json(paths):
    counters, policy = paths
    env = child_environment(
        {"PYTHONPATH": "/x"},
        engines=["caam:model=t2080,seed=01", "software"],
        policy=policy,
        only=["app", "lib"],
        counters=counters,
        run="r1",
        tls=True,
    )
    settings = json.loads(env["CRYPTOFFLOAD_RUN"])
    assert json.dumps(settings) == env["CRYPTOFFLOAD_RUN"]
    assert settings == {
        "engines": ["caam:model=t2080,seed=01", "software"],
        "policy": policy,
        "only": ["app", "lib"],
        "counters": counters,
        "run": "r1",
        "tls": True,
    }


def test_run_builds_nothing_for_hashlib_where_no_engine_may_be_found(engines_found, monkeypatch):
    monkeypatch.setattr(cryptoffload.engines, "may_discover_any", lambda: False)
    install_for_run()
    ns = app_imports("import hashlib, hmac\nfrom hashlib import sha256")
    assert ns["hashlib"] is hashlib and ns["hmac"] is hmac and ns["sha256"] is hashlib.sha256
    assert engines_found == []


def test_run_refuses_an_object_short_of_an_engines_members_before_the_program_starts(
    engines_found,
):
    class NoRun:
        name = "norun"

        def probe(self):
            raise AssertionError("not probed: refused before")

    with pytest.raises(TypeError, match=r"engine 'norun' is missing run\(op\)"):
        install_for_run([NoRun()])
