"""Threads sharing one provider: right answers, exact counters, no hang, no growth."""

from __future__ import annotations

import tracemalloc

import pytest
from differential import TAKE_ALL, build_engine
from thread_workload import TASKS, run_threads

from cryptoffload import Provider

SEED = 7
THREADS = 6
TASKS_EACH = 12
SETS = {
    "software": [],
    "chaos": ["chaos"],
    "caam-t2080": ["caam:model=t2080"],
    "cryptodev": ["cryptodev:any"],
    "all": ["cryptodev:any", "caam:model=imx7d", "chaos", "takeall"],
}


@pytest.mark.parametrize("name", list(SETS))
def test_threads_on_one_provider_get_right_answers_and_exact_counters(name):
    provider = Provider([build_engine(s, SEED) for s in SETS[name]], policy=TAKE_ALL)
    tracemalloc.start()
    try:
        runs = [
            run_threads(provider, THREADS, SEED + i, tasks=TASKS_EACH, deadline=60)
            for i in range(2)
        ]
    finally:
        tracemalloc.stop()
        provider.close()
    for run in runs:
        assert run.stuck == 0
        assert run.wrong == [] and run.errors == []
        assert run.drift == 0, (run.issued, run.counted)
        before, most, after = run.fds
        assert after == before and most <= before + 2
    ran = set(runs[0].tasks) | set(runs[1].tasks)
    assert ran == {task.__name__ for _, task in TASKS}  # the whole mix
    # What the second round leaves behind over the first: caches are full by then.
    assert runs[1].memory[1] - runs[1].memory[0] < 512, runs[1].memory
