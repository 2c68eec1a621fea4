"""The DRBG front end: seeding from the OS and engines, reseeding, fork safety, counting."""

from __future__ import annotations

import os

import pytest
from doubles import DecliningEngine, TakeAllEngine

from cryptoffload import Provider, drbg
from cryptoffload.drbg import Drbg


def test_random_bytes_lengths_and_uniqueness():
    d = Drbg(provider=Provider([]))
    assert d.random_bytes(0) == b""
    outs = {d.random_bytes(32) for _ in range(100)}
    assert len(outs) == 100
    assert len(d.random_bytes(200_000)) == 200_000


def test_engine_trng_feeds_the_seed_and_is_counted():
    p = Provider([TakeAllEngine(algorithms={"drbg"})])
    d = Drbg(provider=p)
    d.random_bytes(16)
    assert d.seed_sources == ["os", "takeall"]
    snap = p.counters.snapshot()
    assert snap["takeall"]["drbg"]["ops"] == 1 and snap["takeall"]["drbg"]["bytes"] == 48
    assert snap["software"]["drbg"]["ops"] == 1


def test_declining_trng_leaves_os_seed_only():
    p = Provider([DecliningEngine(algorithms={"drbg"})])
    d = Drbg(provider=p)
    d.random_bytes(16)
    assert d.seed_sources == ["os"]
    assert p.counters.snapshot()["decliner"]["drbg"]["declined"] == {"unsupported": 1}


def test_reseed_asks_the_engines_again():
    engine = TakeAllEngine(algorithms={"drbg"})
    d = Drbg(provider=Provider([engine]))
    d.random_bytes(1)
    d.reseed()
    assert len([op for op in engine.seen if op.family == "rng"]) == 2


def test_child_after_fork_does_not_repeat_the_parent_stream():
    d = Drbg(provider=Provider([]))
    d.random_bytes(8)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:  # whatever happens, the child must not go on running the test session
            os.write(write, d.random_bytes(32))
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64)
    assert len(child) == 32, "the child could not draw from its DRBG"
    assert child != d.random_bytes(32)


def test_module_level_random_bytes_uses_the_default_drbg():
    assert len(drbg.random_bytes(24)) == 24
    assert drbg.random_bytes(24) != drbg.random_bytes(24)


@pytest.mark.parametrize(("n", "exc"), [(-1, ValueError), (1.5, TypeError), ("8", TypeError)])
def test_bad_lengths_are_refused(n, exc):
    with pytest.raises(exc):
        Drbg(provider=Provider([])).random_bytes(n)


def test_repr_shows_no_state():
    d = Drbg(provider=Provider([]))
    d.random_bytes(1)
    assert repr(d) == "<Drbg seeded, sources=['os']>"
