"""`calibrate --check`: a written policy's decisions measured again: holds, no longer, usage."""

from __future__ import annotations

import json

import pytest
import tomli_w
from controlled import ControlledEngine

from cryptoffload import Policy, Provider, engines
from cryptoffload.tools import calibrate, calibrate_check, cli
from cryptoffload.tools.targets import Target, Targets, probed
from cryptoffload.tools.verify import TAKE_ALL


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def slow_policy(capsys, tmp_path, monkeypatch):
    """A policy calibrate wrote for an engine 2 ms a hash: excluded from sha256."""
    monkeypatch.setitem(
        engines.FACTORIES, "slow", lambda arg: ControlledEngine("slow", ["sha256"], delay=2e-3)
    )
    path = tmp_path / "p.toml"
    argv = ("calibrate", "--engines", "slow", "--write", str(path), "--time", "0.01", "--quiet")
    code, _, _ = run_cli(capsys, *argv)
    assert code == 0 and Policy.load(path).excludes("sha256", "slow")
    return path


def test_a_decision_that_still_holds_exits_0_with_its_table(capsys, slow_policy):
    code, out, _ = run_cli(capsys, "calibrate", "--check", str(slow_policy), "--quiet")
    assert code == 0
    assert "slow" in out and "exclude" in out and "1 of 1 decision(s) hold: all hold" in out
    code, out, _ = run_cli(capsys, "calibrate", "--check", str(slow_policy), "--json")
    data = json.loads(out)
    assert code == 0 and data["holds"] is True and data["policy"] == str(slow_policy)
    (result,) = data["engines"][0]["results"]
    assert result["algorithm"] == "sha256" and result["policy"] == "exclude"
    assert all(row["routed"] == "software" and row["holds"] for row in result["sizes"])
    assert result["recorded"]["kind"] == "never"


def test_a_policy_sending_work_to_a_slower_engine_no_longer_holds_and_exits_1(capsys, slow_policy):
    data = Policy.load(slow_policy).to_dict()
    data["engines"]["slow"] = {"min_size": {"sha256": 0}}  # hand-edited: engine at every size
    slow_policy.write_text(tomli_w.dumps(data))
    code, out, _ = run_cli(capsys, "calibrate", "--check", str(slow_policy), "--quiet")
    assert code == 1 and "no longer holds" in out and "software now faster" in out
    code, out, _ = run_cli(capsys, "calibrate", "--check", str(slow_policy), "--json")
    (result,) = json.loads(out)["engines"][0]["results"]
    assert code == 1 and not result["holds"]
    assert {row["why"] for row in result["sizes"]} == {"software now faster"}


class StepEngine(ControlledEngine):
    """2 ms a job below 4096 bytes, 0.1 ms from there up: a crossover with no marginal sizes."""

    def run(self, op):
        self.delay = 2e-3 if op.size < 4096 else 1e-4
        return super().run(op)


def test_a_crossover_measured_again_holds(monkeypatch):
    def step(arg: str) -> StepEngine:
        return StepEngine("step", ["aes-128-gcm"])

    monkeypatch.setitem(engines.FACTORIES, "step", step)
    reference = ControlledEngine("flat", ["aes-128-gcm"], delay=1e-3)  # stands in for software
    baseline = lambda: Provider([reference], policy=TAKE_ALL)  # noqa: E731
    settings = calibrate.Settings(seconds=0.02, trials=5)
    report = calibrate.run(
        Targets([Target(probed(step("")))]), ["aes-128-gcm"], settings, baseline=baseline
    )
    policy = calibrate.policy_from(report)
    low, _ = policy.limits("aes-128-gcm", None, "step")
    assert 4096 <= low <= 4096 * 1.5  # the first size measured from 4096 up
    checked = calibrate_check.check(policy, settings=settings, baseline=baseline)
    (result,) = checked["engines"][0]["results"]
    assert checked["holds"] and result["holds"]
    routed = {row["size"]: row["routed"] for row in result["sizes"]}
    assert routed[16] == "software" and routed[65536] == "engine"
    assert all(row["now"] == row["routed"] for row in result["sizes"])


def test_an_engine_not_available_now_holds_nothing(capsys, tmp_path):
    point = {"size": 16, "ratio": 0.5, "band": 0.1, "p": 0.03, "decision": "software"}
    result = {"algorithm": "sha256", "kind": "never", "points": [point]}
    data = Policy(engines={"caam:model=t2080-nosec": {"exclude": ["sha256"]}}).to_dict()
    data["calibration"] = {"engines": [{"name": "caam:model=t2080-nosec", "results": [result]}]}
    path = tmp_path / "p.toml"
    path.write_text(tomli_w.dumps(data))
    code, out, _ = run_cli(capsys, "calibrate", "--check", str(path), "--quiet")
    assert code == 1 and "is not available" in out and "has no SEC block" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "holds no [calibration] engines"),
        (("--write", "other.toml"), "--check and --write do not go together"),
        (("--trials", "4"), "--trials must be at least 5"),
    ],
)
def test_usage_errors_exit_2(capsys, tmp_path, extra, message):
    path = tmp_path / "p.toml"
    Policy(deny=["sha1"]).save(path)
    code, _, err = run_cli(capsys, "calibrate", "--check", str(path), *extra)
    assert code == 2 and message in err


def test_a_policy_file_that_is_not_there_is_a_usage_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "calibrate", "--check", str(tmp_path / "none.toml"))
    assert code == 2 and err.startswith("cryptoffload calibrate: ")
