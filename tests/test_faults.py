"""Injected engine faults: every operation still right, counted, and none hangs."""

from __future__ import annotations

import pytest
from differential import TAKE_ALL
from fault_engines import DETECTION, SCENARIOS
from thread_workload import run_threads

from cryptoffload import Provider

SEED = 11
NAMES = [name for name in SCENARIOS if name not in DETECTION]


def engine_misses(provider: Provider) -> int:
    """Operations the engines (not software) failed or declined, by the counters."""
    return sum(
        cell["faults"] + sum(cell["declined"].values())
        for engine, algs in provider.counters.snapshot().items()
        if engine != "software"
        for cell in algs.values()
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_operation_survives_the_injected_faults(name):
    engines, make_injector, options = SCENARIOS[name](SEED)
    provider = Provider(engines, policy=TAKE_ALL, **options)
    assert not provider.unavailable
    injector = make_injector(provider)
    try:
        run = run_threads(provider, 4, SEED, tasks=10, deadline=60, on_sample=injector.tick)
    finally:
        injector.finish()
        provider.close()
    assert run.stuck == 0  # a stalled engine times out: nobody waits forever
    assert run.wrong == [] and run.errors == []
    assert run.drift == 0, (run.issued, run.counted)
    if "slow" in name:
        assert engine_misses(provider) == 0  # slow is not failed: the engine answered all
    else:
        assert injector.injected > 0
        assert engine_misses(provider) > 0  # the faults reached the counters
