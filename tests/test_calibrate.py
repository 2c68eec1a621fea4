"""`calibrate`: the search, the verdicts, the policy file it writes, and the command."""

from __future__ import annotations

import json
import math
import tomllib

import pytest
from controlled import ControlledEngine

from cryptoffload import Policy, Provider, engines
from cryptoffload.hashes import SHA256, digest
from cryptoffload.tools import calibrate, calibrate_stats, cli
from cryptoffload.tools.targets import Target, Targets, probed
from cryptoffload.tools.verify import TAKE_ALL


def point(size: int, ratio: float, band: float = 0.05, declined: str | None = None) -> dict:
    """A size measured in 5 paired trials: software with spread ``band``, the engine ``ratio``
    times it in every pair (so the sign test is decisive and the 5% margin decides)."""
    software = [100 * (1 + band * (i - 2) / 4) for i in range(5)]
    engine = [ratio * s for s in software]
    return {"size": size, **calibrate_stats.assess(engine, software, declined)}


def test_search_bisects_towards_the_crossing_and_measures_few_sizes():
    measured = []

    def measure(size):
        measured.append(size)
        return point(size, size / 3000)  # the engine wins from 3000 bytes up

    points = calibrate.search(measure, calibrate.Settings(low=16, high=65536))
    sizes = [p["size"] for p in points]
    assert sizes == sorted(sizes) and len(measured) == len(set(measured)) <= 12
    # The engine is chosen once it is faster by more than the 5% margin: from 3150 bytes up.
    above = min(p["size"] for p in points if p["decision"] == "engine")
    below = max(s for s in sizes if s < above)
    assert above >= 3150 and above / below <= math.sqrt(2) * 1.1  # one step around it
    result = calibrate.verdict(points, bulk=True)
    assert (result["kind"], result["min_size"], result["max_size"]) == ("crosses", above, None)


@pytest.mark.parametrize(
    ("ratios", "kind", "low", "high"),
    [
        ([2.0, 3.0, 4.0], "always", 0, None),
        ([0.1, 0.2, 0.5], "never", None, None),
        ([0.99, 1.01, 1.02], "no significant gain", None, None),
        ([0.5, 0.9, 1.5, 2.0], "crosses", 1024, None),
        ([2.0, 1.5, 0.9, 0.5], "falls", 0, 256),
        ([0.5, 1.5, 1.6, 0.5], "window", 256, 1024),
        ([1.5, 0.5, 1.5, 1.6], "crosses", 1024, None),  # the win at 16 B alone: hysteresis
        ([1.5, 1.6, 0.5, 1.5, 1.6], "crosses (mixed)", 1024, None),
    ],
)
def test_verdicts(ratios, kind, low, high):
    sizes = (16, 64, 256, 1024, 4096)[-len(ratios) :] if len(ratios) == 5 else (16, 256, 1024, 4096)
    points = [point(size, r) for size, r in zip(sizes, ratios, strict=False)]
    result = calibrate.verdict(points, bulk=True)
    assert (result["kind"], result["min_size"], result["max_size"]) == (kind, low, high)


def test_a_size_the_engine_declines_is_a_size_it_loses():
    points = [point(16, 2.0), point(1024, 2.0), point(65536, 1.0, declined="too-large x3")]
    result = calibrate.verdict(points, bulk=True)
    assert (result["kind"], result["max_size"]) == ("falls", 1024)


def test_calibration_finds_the_crossover_of_engines_with_controlled_costs():
    # Engine: 1 ms a job whatever its size. Baseline: 1 ms per 4096 bytes. Equal at 4096 bytes.
    engine = ControlledEngine("fixed", ["aes-128-gcm"], delay=1e-3)
    reference = ControlledEngine("per-byte", ["aes-128-gcm"], per_byte=1e-3 / 4096)
    report = calibrate.run(
        Targets([Target(probed(engine))]),
        ["aes-128-gcm"],
        calibrate.Settings(seconds=0.02, trials=5),
        baseline=lambda: Provider([reference], policy=TAKE_ALL),
    )
    (result,) = report["engines"][0]["results"]
    assert result["kind"] == "crosses" and result["confidence"] > 0.95
    # 4096, less one step at most; more on a busy machine, where the engine is chosen only
    # once it wins nearly every pair (7 of 8) by more than 5%.
    assert 2048 <= result["min_size"] <= 16384
    assert all(p["share"] == 1.0 for p in result["points"])  # the engine did every measured op


def test_the_policy_written_routes_by_the_calibration_and_keeps_the_figures(tmp_path, monkeypatch):
    report = {
        "date": "2026-12-01T00:00:00+00:00",
        "machine": {"cpu_model": "test", "openssl_cli": None},
        "settings": {"low": 16, "high": 65536},
        "not_found": {},
        "engines": [
            {
                "name": "fixed",
                "origin": "",
                "available": True,
                "reason": "",
                "skipped": {},
                "results": [
                    {
                        "algorithm": "sha256",
                        "kind": "crosses",
                        "min_size": 4096,
                        "max_size": None,
                        "points": [point(16, 0.1), point(65536, 3.0)],
                    },
                    {
                        "algorithm": "sha384",
                        "kind": "never",
                        "min_size": None,
                        "max_size": None,
                        "points": [point(16, 0.1)],
                    },
                    {
                        "algorithm": "sha512",
                        "kind": "no significant gain",
                        "min_size": None,
                        "max_size": None,
                        "points": [point(16, 1.0)],
                    },
                    {
                        "algorithm": "aes-128-cbc",
                        "kind": "always",
                        "min_size": 0,
                        "max_size": None,
                        "points": [point(16, 2.0)],
                    },
                ],
            }
        ],
    }
    kept = Policy(deny=["sha1"])
    policy = calibrate.policy_from(report, kept)
    path = tmp_path / "policy.toml"
    calibrate.write(policy, path, "cryptoffload calibrate --engines fixed")
    text = path.read_text()
    assert text.startswith("# Written by `cryptoffload calibrate --engines fixed`")
    data = tomllib.loads(text)
    assert data["engines"]["fixed"] == {
        "min_size": {"sha256": 4096, "aes-128-cbc": 0},
        "exclude": ["sha384", "sha512"],  # never, and no significant gain: software
    }
    assert data["calibration"]["machine"] == {"cpu_model": "test"}  # None is left out
    loaded = Policy.load(path)
    assert loaded.deny == ("sha1",) and loaded.calibration["settings"]["high"] == 65536
    assert loaded.limits("sha256", None, "fixed") == (4096, None)
    assert loaded.limits("aes-128-cbc", None, "fixed") == (0, None)  # over the 256 B default
    assert loaded.limits("aes-128-cbc", None, "other") == (256, None)

    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(path))
    assert Policy.from_env() == loaded
    engine = ControlledEngine("fixed", ["sha256", "sha384"])
    provider = Provider([engine], policy=loaded)
    assert provider.lane("sha384").software_only  # excluded: OpenSSL directly, nothing counted
    for size in (100, 5000):
        digest(bytes(size), SHA256(), provider=provider)
    snap = provider.counters.snapshot()
    assert snap["fixed"]["sha256"]["ops"] == 1 and snap["fixed"]["sha256"]["bytes"] == 5000
    assert snap["fixed"]["sha256"]["declined"] == {"below-threshold": 1}


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_writes_a_policy_that_loads_and_prints_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(
        engines.FACTORIES, "slow", lambda arg: ControlledEngine("slow", ["sha256"], delay=2e-3)
    )
    path = tmp_path / "p.toml"
    code, out, _ = run_cli(
        capsys,
        "calibrate",
        "--engines",
        "slow",
        "--write",
        str(path),
        "--json",
        "--time",
        "0.01",
        "--trials",
        "5",
    )
    assert code == 0
    data = json.loads(out)
    (engine,) = data["engines"]
    (result,) = engine["results"]
    assert result["algorithm"] == "sha256" and result["kind"] == "never"
    assert {"size", "engine", "software", "ratio", "band", "share", "won", "p", "decision"} <= set(
        result["points"][0]
    )
    assert result["confidence"] > 0.95 and result["reason"] == "software faster at every size"
    assert data["written"] == str(path)
    assert Policy.load(path).excludes("sha256", "slow")


def test_cli_fails_for_a_named_engine_that_is_absent(capsys):
    code, out, _ = run_cli(capsys, "calibrate", "--engines", "caam:model=t2080-nosec")
    assert code == 1 and "has no SEC block" in out


@pytest.mark.parametrize(
    "argv",
    [
        ("calibrate", "--engines", "software"),
        ("calibrate", "--engines", "nonesuch"),
        ("calibrate", "--engines", "caam:model=t2080", "--algs", "sha265"),
    ],
)
def test_cli_usage_errors_exit_2(capsys, argv):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err.startswith("cryptoffload calibrate: ")


def test_noise_is_judged_by_the_pairs():
    # Fifty times slower in every pair whatever the spread; 1.5 times faster by the medians
    # while the pairs split 3 to 2 is no significant gain.
    slow = [point(16, 0.02, band=2.0), point(65536, 0.05, band=2.0)]
    assert calibrate.verdict(slow, bulk=True)["kind"] == "never"
    split = {"engine": [150.0, 150.0, 150.0, 60.0, 60.0], "software": [100.0] * 5}
    close = [
        {"size": 16, **calibrate_stats.assess(split["engine"], split["software"])},
        {"size": 65536, **calibrate_stats.assess(split["engine"], split["software"])},
    ]
    assert calibrate.verdict(close, bulk=True)["kind"] == "no significant gain"


def test_cli_says_an_engine_claims_none_of_the_algorithms_asked_and_exits_1(capsys):
    code, out, _ = run_cli(
        capsys, "calibrate", "--engines", "caam:model=t2080", "--algs", "chacha20"
    )
    assert code == 1 and "claims none of the algorithms asked (chacha20)" in out
    code, out, err = run_cli(
        capsys, "calibrate", "--engines", "caam:model=t2080", "--algs", "chacha20", "--json"
    )
    assert code == 1 and json.loads(out)["engines"][0]["results"] == []
    assert "claims none of the algorithms asked (chacha20)" in err
