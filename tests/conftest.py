"""Shared fixtures: every engine-taking test runs against each engine set present."""

from __future__ import annotations

import pytest
from doubles import ChaosEngine, TakeAllEngine

import cryptoffload
from cryptoffload import Provider


def _software() -> Provider:
    return Provider([])


def _takeall() -> Provider:
    return Provider([TakeAllEngine()], policy=cryptoffload.Policy(min_size={"*": 0}))


def _chaos() -> Provider:
    return Provider([ChaosEngine(seed=1234)], policy=cryptoffload.Policy(min_size={"*": 0}))


def _caam(part: str):
    def make() -> Provider:
        return Provider([f"caam:model={part}"], policy=cryptoffload.Policy(min_size={"*": 0}))

    return make


#: The engine sets every vector suite runs through: software alone, an engine that takes every
#: op it claims (RSA through the raw-exponent path), one that declines and faults at random, and
#: the CAAM engine on the model of a QorIQ part (big-endian) and of an i.MX part (little-endian).
ENGINE_SETS = {
    "software": _software,
    "takeall": _takeall,
    "chaos": _chaos,
    "caam-t2080": _caam("t2080"),
    "caam-imx7d": _caam("imx7d"),
}


@pytest.fixture(params=list(ENGINE_SETS), ids=list(ENGINE_SETS))
def provider(request: pytest.FixtureRequest) -> Provider:
    """A fresh provider for each engine set; its counters start at zero."""
    return ENGINE_SETS[request.param]()
