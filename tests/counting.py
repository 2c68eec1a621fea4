"""Counter checks for the vector suites: exactly the ops a test did, done by the right engines.

What each engine set of the ``provider`` fixture (tests/conftest.py) promises about its counters:

* ``software``: software did every op; nothing was declined or faulted.
* ``takeall``: the take-all engine did every op that went through ``Provider.run``; software did
  only the ops a streaming context finished outside ``run`` (GCM through ``Cipher``), and for
  each of those the engine is counted as declining for ``streaming``.
* ``chaos``: every op was offered to the chaos engine. Each one it declined or faulted on was
  finished by software, so software's ops are the engine's declines plus its faults.

One test can be too short for the random engine to both decline and fault, so chaos activity is
summed per file in a :class:`ChaosTally` and checked once by the file's last test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from doubles import TakeAllEngine

from cryptoffload import Policy, Provider
from cryptoffload.errors import REASONS

SOFTWARE = "software"
TAKEALL = "takeall"
CHAOS = "chaos"
#: A real engine (the CAAM on the model, cryptodev over its stand-in, a SoftHSM token): it
#: claims what its device can do and declines, with a reason, what it cannot express (a GCM
#: nonce that is not 12 bytes...); it never faults here.
REAL = "real"
STREAMING = "streaming"
#: Engines with symmetric algorithms only (cryptodev-linux has no public-key request): the
#: public-key suites run past them to software, and they must show nothing for those.
SYMMETRIC_ONLY = frozenset({"cryptodev", "cryptodev:any"})
#: Engines whose public-key claims are what their token offers (PKCS#11: NIST curves, no FFDH):
#: the rest runs past them to software, and they must show nothing for it.
PARTIAL_PREFIXES = ("pkcs11:",)

_EMPTY = {"ops": 0, "bytes": 0, "declined": {}, "faults": 0}


def engine_set(provider: Provider) -> str:
    """``software``, ``takeall`` or ``chaos``: which of the fixture's engine sets this is."""
    names = [engine.name for engine in provider.engines if engine.name != SOFTWARE]
    if not names:
        return SOFTWARE
    real = ("caam:model=", "caam:device=", "pkcs11:")
    if len(names) == 1 and (names[0].startswith(real) or names[0] in SYMMETRIC_ONLY):
        return REAL
    if len(names) != 1 or names[0] not in (TAKEALL, CHAOS):
        raise AssertionError(f"counting.py knows nothing about the engine set {names!r}")
    return names[0]


def claimed(provider: Provider) -> bool:
    """True when an engine other than software claims every algorithm (takeall, chaos)."""
    return engine_set(provider) != SOFTWARE


class ChaosTally:
    """What the chaos engine did over all the chaos-set tests of one file."""

    def __init__(self) -> None:
        self.tests = 0
        self.engine_ops = 0
        self.software_ops = 0
        self.declined = 0
        self.faults = 0

    def add(self, engine_ops: int, software_ops: int, declined: int, faults: int) -> None:
        self.engine_ops += engine_ops
        self.software_ops += software_ops
        self.declined += declined
        self.faults += faults

    def check(self, request: pytest.FixtureRequest) -> None:
        """Both engines did ops, and the chaos engine both declined and faulted somewhere.

        Under pytest-xdist a file's tests are shared among workers, and this worker may have run
        only a few chaos-set tests (the streamed ones never reach the engine): then a tally
        short of one of the four is a skip that says so, not a failure. Run the file alone
        (``python3 -m pytest FILE``) for the strict check."""
        if self.tests == 0:
            pytest.skip("no chaos-set test of this file ran before this one")
        missing = [
            what
            for what, n in (
                ("completed no op", self.engine_ops),
                ("left software no op", self.software_ops),
                ("declined no op", self.declined),
                ("faulted on no op", self.faults),
            )
            if n <= 0
        ]
        if missing and hasattr(request.config, "workerinput"):
            pytest.skip(
                f"only {self.tests} chaos-set test(s) of this file ran in this xdist worker, and "
                f"there the chaos engine {', '.join(missing)}: run the file alone to check"
            )
        assert not missing, f"over this file the chaos engine {', '.join(missing)}"


def check_ops(
    provider: Provider,
    performed: Mapping[str, int],
    tally: ChaosTally,
    *,
    streamed: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Assert the counters show exactly ``performed`` ops per algorithm, by the right engines.

    ``performed`` maps algorithm names (``aes-128-cbc``, ``sha256``, ``hmac-sha1``...) to the
    number of ops the test did; every other algorithm must show no activity at all.
    ``streamed`` says how many of them a streaming context finished in software outside
    ``Provider.run`` (GCM through ``Cipher``). Returns the snapshot.
    """
    streamed = streamed or {}
    kind = engine_set(provider)
    snap = provider.counters.snapshot()
    expected = {alg: n for alg, n in performed.items() if n}
    touched = {
        alg
        for algs in snap.values()
        for alg, cell in algs.items()
        if cell["ops"] or cell["declined"] or cell["faults"]
    }
    assert touched == set(expected), f"algorithms counted {sorted(touched)} != {sorted(expected)}"
    if kind == CHAOS:
        tally.tests += 1

    for alg, n in expected.items():
        cells = {engine: algs.get(alg, _EMPTY) for engine, algs in snap.items()}
        total = sum(cell["ops"] for cell in cells.values())
        assert total == n, f"{alg}: counters show {total} ops, the test did {n}"
        sw = cells[SOFTWARE]
        assert not sw["declined"] and not sw["faults"], f"{alg}: software declined or faulted"
        s = streamed.get(alg, 0)
        if kind == SOFTWARE:
            assert sw["ops"] == n
            continue
        if kind == REAL:
            name = next(e.name for e in provider.engines if e.name != SOFTWARE)
            engine = cells.get(name, _EMPTY)
            if alg not in provider.capabilities[name].algorithms:
                assert engine == _EMPTY and sw["ops"] == n, f"{alg}: {name} claims none of it"
                continue
            assert engine["faults"] == 0, f"{alg}: {name} faulted"
            assert set(engine["declined"]) <= REASONS, f"{alg}: {engine['declined']}"
            assert sw["ops"] == sum(engine["declined"].values()), (alg, engine, sw)
            continue
        engine = cells[kind]
        if kind == TAKEALL:
            assert engine["ops"] == n - s, f"{alg}: takeall did {engine['ops']} of {n - s} ops"
            assert sw["ops"] == s, f"{alg}: software did {sw['ops']} ops, expected {s}"
            assert engine["declined"] == ({STREAMING: s} if s else {}), (alg, engine["declined"])
            assert engine["faults"] == 0, f"{alg}: takeall faulted"
            continue
        declined = dict(engine["declined"])
        assert declined.pop(STREAMING, 0) == s, f"{alg}: streaming declines != {s}"
        assert set(declined) <= REASONS, f"{alg}: unknown decline reasons {declined}"
        random_declines = sum(declined.values())
        assert sw["ops"] == s + random_declines + engine["faults"], (
            f"{alg}: software did {sw['ops']} ops but the chaos engine passed on "
            f"{s + random_declines} and faulted on {engine['faults']}"
        )
        tally.add(engine["ops"], sw["ops"] - s, random_declines, engine["faults"])
    return snap


# -- the public-key suites' checks: one op per call, no streaming ----------------------------------


def takeall_provider() -> tuple[Provider, TakeAllEngine]:
    """A provider whose take-all engine may take every op, whatever its size."""
    engine = TakeAllEngine()
    return Provider([engine], policy=Policy(min_size={"*": 0})), engine


def cells(provider: Provider, alg: str) -> dict[str, dict]:
    """Each engine's counter cell for ``alg`` (zero when it has none)."""
    snapshot = provider.counters.snapshot()
    return {
        engine.name: snapshot.get(engine.name, {}).get(alg, _EMPTY) for engine in provider.engines
    }


def assert_counted(
    provider: Provider,
    alg: str,
    n: int,
    *,
    engine_declines: bool = False,
    require_claimed: bool = True,
) -> None:
    """``n`` operations of ``alg`` completed, summed over engines. Every op was offered once to
    each routed engine that claims ``alg`` (done there, or declined/faulted and finished by
    software); in the take-all set the engine did them all, unless ``engine_declines``, when it
    declined every one as unsupported and software did them. With ``require_claimed`` off, an
    engine that does not claim ``alg`` must simply show nothing for it."""
    found = cells(provider, alg)
    assert sum(c["ops"] for c in found.values()) == n, found
    for engine in provider.engines[:-1]:
        cell = found[engine.name]
        if alg not in provider.capabilities[engine.name].algorithms:
            claims_it = (
                require_claimed
                and engine.name not in SYMMETRIC_ONLY
                and not engine.name.startswith(PARTIAL_PREFIXES)
            )
            assert not claims_it, f"{engine.name} does not claim {alg}"
            assert cell == _EMPTY, found
            continue
        offloaded = cell["ops"]
        finished_by_software = sum(cell["declined"].values()) + cell["faults"]
        assert offloaded + finished_by_software == n, found
        assert found[SOFTWARE]["ops"] == finished_by_software, found
        if type(engine) is TakeAllEngine:
            if engine_declines:
                assert cell["declined"] == {"unsupported": n}, found
                assert offloaded == 0
            else:
                assert offloaded == n and found[SOFTWARE]["ops"] == 0, found


def assert_untouched(provider: Provider, alg: str) -> None:
    """No engine completed, declined or faulted on ``alg``, and no double saw an op of it."""
    found = cells(provider, alg)
    assert all(c == _EMPTY for c in found.values()), found
    for engine in provider.engines[:-1]:
        assert [op for op in getattr(engine, "seen", []) if op.alg == alg] == []
