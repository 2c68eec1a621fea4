"""`verify`: offload proven by counters, the negative control, the cross-check, the binding; the
command's exit status and JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from controlled import ControlledEngine
from doubles import AbsentEngine, DecliningEngine

from cryptoffload import Provider, engines
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.tools import cli, targets, verify, workload

ALGS = ["aes-128-gcm", "sha256", "hmac-sha256"]
FAST = verify.Settings(trials=4, trial_seconds=0.002)


def check(engine, algs=ALGS, control=None) -> dict:
    target = targets.Target(targets.probed(engine))
    return verify.verify_engine(target, algs, FAST, control=control)


def test_a_working_engine_passes_every_step():
    result = check(ControlledEngine("good", ALGS))
    assert result["passed"], result["problems"]
    for a in result["algorithms"]:
        n = len(workload.build(a["algorithm"]))
        assert a["status"] == "offloaded" and a["offload"]["ops"] == n
        assert a["crosscheck"]["agreed"] == n and not a["crosscheck"]["mismatches"]
        assert a["control"]["passed"] and a["control"]["software_ops"]
        assert a["binding"] == {
            "driver": "controlled",
            "kind": "hardware",
            "source": "the engine",
            "flag": "",
        }
        assert {"wall", "user", "sys", "reading", "witness"} <= set(a["cpu"])


def test_an_engine_that_declines_everything_fails_with_its_reasons():
    result = check(DecliningEngine(reason="busy", algorithms=ALGS))
    assert not result["passed"]
    for a in result["algorithms"]:
        assert a["status"] == "not offloaded" and not a["passed"]
        assert a["offload"]["declined"] == {"busy": a["offload"]["offered"]}
        assert any("not offloaded" in p and "busy" in p for p in a["problems"])


def test_a_wrong_byte_once_fails_naming_algorithm_size_and_input():
    # Job 3 of the gcm workload is "encrypt 64 B" (item 2).
    result = check(ControlledEngine("liar", ["aes-128-gcm"], wrong_at=3), ["aes-128-gcm"])
    (a,) = result["algorithms"]
    assert not a["passed"] and a["status"] == "offloaded"
    (wrong,) = a["crosscheck"]["mismatches"]
    assert wrong["algorithm"] == "aes-128-gcm"
    assert wrong["input"]["label"] == "encrypt 64 B" and wrong["input"]["size"] == 64
    item = workload.build("aes-128-gcm")[wrong["input"]["item"]]
    assert wrong["input"]["data"].startswith(bytes(item.op.data)[:32].hex())
    assert "key" not in wrong["input"]
    assert any("wrong result: aes-128-gcm, encrypt 64 B, size 64" in p for p in a["problems"])


def test_the_negative_control_catches_the_engines_counters_moving():
    engine = ControlledEngine("sticky", ["sha256"])
    # A control that did not really unregister the engine: its counters move.
    result = check(engine, ["sha256"], control=Provider([engine], policy=verify.TAKE_ALL))
    (a,) = result["algorithms"]
    assert not a["control"]["passed"] and not a["passed"]
    assert any("with sticky unregistered, counters of ['sticky'] moved" in p for p in a["problems"])


def test_the_negative_control_catches_the_engines_own_figures_moving(monkeypatch):
    engine = ControlledEngine("leaky", ["sha256"])
    original = SoftwareEngine.run

    def reaches_the_engine(self, op):  # software secretly going through the device
        engine.jobs += 1
        return original(self, op)

    monkeypatch.setattr(SoftwareEngine, "run", reaches_the_engine)
    (a,) = check(engine, ["sha256"])["algorithms"]
    assert not a["passed"]
    assert any("leaky's own figures moved" in p for p in a["control"]["problems"])


class DeviceBacked(ControlledEngine):
    """Figures shaped as a ``caam:device=`` engine's: its own counts, and under ``device`` the
    device process's, which that process publishes after the jobs the engine saw complete (the
    last loop turn's work time, the interrupt it raised) and which tick while it idles."""

    def __init__(self, name: str, algorithms: list[str]) -> None:
        super().__init__(name, algorithms)
        self.reads = 0

    @property
    def figures(self) -> dict:
        self.reads += 1
        device = {"jobs": self.jobs, "work_s": self.reads * 1e-4, "wakeups": self.reads}
        return {"jobs": self.jobs, "device": device}


def test_the_negative_control_leaves_a_device_process_own_figures_out():
    (a,) = check(DeviceBacked("device", ["sha256"]), ["sha256"])["algorithms"]
    assert a["control"]["passed"] and a["passed"], a["problems"]


def test_the_negative_control_still_catches_a_device_backed_engine_doing_work(monkeypatch):
    engine = DeviceBacked("device", ["sha256"])
    original = SoftwareEngine.run

    def reaches_the_engine(self, op):
        engine.jobs += 1
        return original(self, op)

    monkeypatch.setattr(SoftwareEngine, "run", reaches_the_engine)
    (a,) = check(engine, ["sha256"])["algorithms"]
    assert not a["passed"]
    assert any("device's own figures moved" in p and "'jobs'" in p for p in a["problems"])


def test_a_hardware_only_engine_bound_to_a_software_driver_is_flagged():
    class Bound(ControlledEngine):
        hardware_only = True

        def probe(self):
            detail = {"algorithms": {"sha256": {"driver": "sha256-generic", "hardware": False}}}
            return Capabilities(True, algorithms=frozenset({"sha256"}), detail=detail)

    (a,) = check(Bound("kernel", ["sha256"]), ["sha256"])["algorithms"]
    assert a["binding"]["kind"] == "software" and a["binding"]["flag"]
    assert not a["passed"] and any("promises hardware" in p for p in a["problems"])


def test_an_engine_not_available_fails_with_its_reason():
    result = check(AbsentEngine())
    assert not result["passed"] and "no /dev/absent" in result["problems"][0]


def test_workloads_are_reproducible_and_valid():
    provider = Provider([])
    for alg in ["aes-256-ccm", "gmac-aes-192", "cmac-aes-128", "sha512-256", "rsa-1024-public"]:
        items = workload.build(alg)
        again = [item.describe() for item in workload.build(alg)]
        assert items and [item.describe() for item in items] == again
        for item in items:
            try:
                item.run(provider)
            except Exception as exc:  # only the deliberately altered items may be refused
                assert "altered" in item.label, (alg, item.label, exc)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fake_engines(monkeypatch):
    monkeypatch.setitem(engines.FACTORIES, "good", lambda arg: ControlledEngine("good", ["sha256"]))
    monkeypatch.setitem(
        engines.FACTORIES, "decliner", lambda arg: DecliningEngine(algorithms=["sha256"])
    )


@pytest.mark.usefixtures("fake_engines")
def test_cli_exit_0_when_proven_and_json_shape(capsys):
    code, out, _ = run_cli(capsys, "verify", "--engines", "good", "--json", "--trials", "4")
    data = json.loads(out)
    assert code == 0 and data["passed"] is True and data["failed"] == 0
    assert set(data) >= {"machine", "settings", "engines", "not_found", "checked", "passed"}
    (engine,) = data["engines"]
    (a,) = engine["algorithms"]
    assert set(a) >= {"algorithm", "passed", "status", "offload", "crosscheck", "control"}
    assert set(a) >= {"cpu", "binding", "problems"}
    assert a["control"]["wall"]["verdict"] in ("beyond noise", "within noise", "too few trials")


@pytest.mark.usefixtures("fake_engines")
def test_cli_exit_1_when_not_offloaded_and_the_table_says_why(capsys):
    code, out, _ = run_cli(capsys, "verify", "--engine", "decliner", "--engine", "good")
    assert code == 1
    assert "not offloaded" in out and "not verified" in out


def test_cli_exit_1_for_a_named_engine_that_is_absent_with_its_reason(capsys):
    code, out, _ = run_cli(capsys, "verify", "--engines", "caam:model=t2080-nosec")
    assert code == 1
    assert "t2080-nosec has no SEC block" in out


def test_cli_on_the_caam_device_process():
    # As a user runs it: the device process is this command's, stopped when it exits.
    run = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "verify", "--engines", "caam:device=t2080",
         "--algs", "aes-128-gcm,sha256", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    (engine,) = json.loads(run.stdout)["engines"]
    for a in engine["algorithms"]:
        assert a["status"] == "offloaded" and a["control"]["passed"], a["problems"]
    assert engine["figures"]["device"]["jobs"] > 0  # the device did the work


@pytest.mark.parametrize(
    "argv",
    [
        ("verify", "--engines", "nonesuch"),
        ("verify", "--engines", "software"),
        ("verify", "--engines", "caam:model=t2080", "--algs", "aes-128-gmc"),
    ],
)
def test_cli_usage_errors_exit_2(capsys, argv):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err.startswith("cryptoffload verify: ")


def test_cli_bad_option_values_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["verify", "--trials", "0"])
    assert exc.value.code == 2


def test_cli_on_the_caam_model(capsys):
    code, out, _ = run_cli(
        capsys, "verify", "--engines", "caam:model=t2080", "--algs", "aes-128-cbc", "--json"
    )
    data = json.loads(out)
    (a,) = data["engines"][0]["algorithms"]
    assert code == 0 and a["binding"]["kind"] == "model" and a["status"] == "offloaded"
