"""benchmarks/inflight.py: each of its forms does every op it is given on the engine (none falls
back to software unseen), and one run prints a row per form (timing is the benchmark's)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cryptoffload import Policy, Provider

ROOT = Path(__file__).resolve().parents[1]
ENGINE = "caam:model=t2080"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("inflight", ROOT / "benchmarks" / "inflight.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ops(provider: Provider, engine: str, alg: str) -> int:
    return provider.counters.snapshot()[engine].get(alg, {}).get("ops", 0)


@pytest.mark.parametrize("workload", ["gcm", "ecb16"])
def test_every_form_does_each_of_its_ops_on_the_engine(bench, workload):
    _, alg, build = bench.WORKLOADS[workload]
    provider = Provider([ENGINE], policy=Policy(min_size={"*": 0}))
    runner = asyncio.Runner()
    pools: dict[int, ThreadPoolExecutor] = {}
    try:
        forms = build(runner, pools, provider, 8, [1, 4])
        assert set(forms) == {
            "sync",
            *(f"{form}{n}" for form in ("batch", "async", "xbatch", "threads") for n in (1, 4)),
        }
        for name, form in forms.items():
            before = _ops(provider, ENGINE, alg)
            form()
            counted = _ops(provider, ENGINE, alg) - before
            assert counted == 8, f"{name}: the engine did {counted} of 8 ops"
        assert _ops(provider, "software", alg) == 0
    finally:
        runner.close()
        for pool in pools.values():
            pool.shutdown()
        provider.close()


def test_a_run_prints_a_row_per_form_and_engine_with_no_fallback_mark(bench, monkeypatch, capsys):
    argv = ["inflight.py", "--rounds", "1", "--ops", "4", "--inflight", "2"]
    monkeypatch.setattr(sys, "argv", [*argv, "--engines", ENGINE, "software"])
    bench.main()
    out = capsys.readouterr().out
    assert "(!)" not in out
    rows = [line.split() for line in out.splitlines()[2:]]
    forms = {(row[0], row[-6]) for row in rows}
    for engine in (ENGINE, "software"):
        for form in ("sync", "batch2", "async2", "xbatch2", "threads2"):
            assert (engine, form) in forms
