"""One routing table driven through every way an op is run (``Lane.run``, the primitive's call
with its direct path, the primitive's call on the engine route, ``Lane.run_batch``,
``asyncio_lane.run``): the same answers, declines and counters from each; and the asyncio lane
reaches the lane through public names only."""

from __future__ import annotations

import ast
import asyncio
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as C_AESGCM
from doubles import DecliningEngine, FaultingEngine, TakeAllEngine

import cryptoffload
from cryptoffload import Provider
from cryptoffload.aead import AESGCM
from cryptoffload.core import asyncio_lane
from cryptoffload.core.ops import AeadOp
from cryptoffload.core.policy import Policy
from cryptoffload.devicekey import DeviceKeyError

GCM = "aes-128-gcm"
KEY = bytes(range(16))
NONCE = bytes(12)
SIZES = (8, 100, 5000)
SEALED = C_AESGCM(KEY).encrypt(NONCE, b"p" * 100, b"aad")
FORGED = SEALED[:-1] + bytes([SEALED[-1] ^ 1])
#: (kind, data, aad) of each op: encryptions of each size, a good and a forged decryption.
CALLS = [("encrypt", bytes([n % 251]) * n, b"") for n in SIZES] + [
    ("decrypt", SEALED, b"aad"),
    ("decrypt", FORGED, b"aad"),
]


class CheckFailingEngine(DecliningEngine):
    """Fails the tag of every op it is given: its answer, not a fault."""

    def run(self, op: Any) -> Any:
        self.calls += 1
        raise InvalidTag()


class DeviceKeyEngine(DecliningEngine):
    """Says every op's key is a device key it cannot open: nobody else can either."""

    def run(self, op: Any) -> Any:
        self.calls += 1
        raise DeviceKeyError("key bound to another device")


class WithSessions:
    """A table's engine that also keeps sessions, each call its ``run`` of the same op: the
    engine route then takes the primitive's ops (the first engine's)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.name = engine.name

    def probe(self) -> Any:
        return self._engine.probe()

    def run(self, op: Any) -> Any:
        return self._engine.run(op)

    def session(self, op: Any) -> Any:
        return _RunSession(self._engine, op)


class _RunSession:
    def __init__(self, engine: Any, op: Any) -> None:
        self._engine, self._op = engine, op

    def _run(self, kind: str, nonce: bytes, data: bytes, aad: Any) -> Any:
        op = self._op
        return self._engine.run(AeadOp(op.alg, kind, op.key, nonce, data, aad, op.tag_length))

    def encrypt(self, nonce: bytes, data: bytes, aad: Any) -> Any:
        return self._run("encrypt", nonce, data, aad)

    def decrypt(self, nonce: bytes, data: bytes, aad: Any) -> Any:
        return self._run("decrypt", nonce, data, aad)


def window(name: str, low: int, high: int) -> dict[str, Any]:
    return {name: {"min_size": {GCM: low}, "max_size": {GCM: high}}}


#: id -> (engines, policy, the counters expected: engine -> (ops, declines, faults)).
TABLE: dict[str, tuple[Callable[[], list[Any]], Policy, dict[str, tuple[int, dict, int]]]] = {
    "size-window": (
        lambda: [TakeAllEngine("a", [GCM])],
        Policy(engines=window("a", 64, 4096)),
        {"a": (3, {"below-threshold": 1, "too-large": 1}, 0), "software": (2, {}, 0)},
    ),
    "declines-then-answers": (
        lambda: [DecliningEngine("d", "busy", [GCM]), TakeAllEngine("a", [GCM])],
        Policy(engines=window("a", 0, 4096)),
        {"d": (0, {"busy": 5}, 0), "a": (4, {"too-large": 1}, 0), "software": (1, {}, 0)},
    ),
    "faults-then-answers": (
        lambda: [FaultingEngine(name="f", algorithms=[GCM]), TakeAllEngine("a", [GCM])],
        Policy(),
        {"f": (0, {}, 5), "a": (5, {}, 0)},
    ),
    "faults-then-software": (
        lambda: [FaultingEngine(RuntimeError("ring stalled"), name="f", algorithms=[GCM])],
        Policy(),
        {"f": (0, {}, 5), "software": (5, {}, 0)},
    ),
    "fails-a-check": (
        lambda: [CheckFailingEngine("c", algorithms=[GCM]), TakeAllEngine("a", [GCM])],
        Policy(),
        {"c": (5, {}, 0)},
    ),
    "device-key": (
        lambda: [DeviceKeyEngine("k", algorithms=[GCM]), TakeAllEngine("a", [GCM])],
        Policy(),
        {},
    ),
    "denied": (
        lambda: [TakeAllEngine("a", [GCM])],
        Policy(deny=[GCM]),
        {"a": (0, {"denied": 5}, 0), "software": (5, {}, 0)},
    ),
    "required-declined": (
        lambda: [DecliningEngine("d", "busy", [GCM])],
        Policy(require=[GCM]),
        {"d": (0, {"busy": 5}, 0)},
    ),
    "required-with-a-window": (
        lambda: [FaultingEngine(name="f", algorithms=[GCM]), TakeAllEngine("a", [GCM])],
        Policy(require=[GCM], engines=window("a", 64, 1 << 20)),
        {"f": (0, {}, 5), "a": (4, {"below-threshold": 1}, 0)},
    ),
}


def ops() -> list[AeadOp]:
    return [AeadOp(GCM, kind, KEY, NONCE, data, aad, 16) for kind, data, aad in CALLS]


def outcome(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        return as_answer(exc)


def as_answer(value: Any) -> Any:
    """A result as it is; an exception as its type and, for OffloadRequired, the declines."""
    if isinstance(value, Exception):
        return type(value).__name__, getattr(value, "declines", None)
    return bytes(value)


def through_lane_run(provider: Provider) -> list[Any]:
    lane = provider.lane(GCM)
    return [outcome(lambda op=op: lane.run(op)) for op in ops()]


def through_the_primitive(provider: Provider) -> list[Any]:
    gcm = AESGCM(KEY, provider=provider)
    outcome(lambda: gcm.encrypt(NONCE, b"", None))  # binds the lane: the ordinary path
    provider.counters.reset()  # that op is not the table's
    return [
        outcome(lambda kind=kind, data=data, aad=aad: getattr(gcm, kind)(NONCE, data, aad))
        for kind, data, aad in CALLS
    ]


def through_run_batch(provider: Provider) -> list[Any]:
    return [as_answer(answer) for answer in provider.lane(GCM).run_batch(ops())]


def through_asyncio(provider: Provider) -> list[Any]:
    lane = provider.lane(GCM)

    async def go() -> list[Any]:
        out = []
        for op in ops():
            try:
                out.append(as_answer(await asyncio_lane.run(lane, op)))
            except Exception as exc:
                out.append(as_answer(exc))
        return out

    return asyncio.run(go())


WAYS = {
    "lane-run": through_lane_run,
    "primitive": through_the_primitive,
    "engine-route": through_the_primitive,  # with every engine keeping sessions
    "run-batch": through_run_batch,
    "asyncio": through_asyncio,
}


def counted(provider: Provider) -> dict[str, tuple[int, dict, int]]:
    """Per engine with anything counted for the algorithm: (ops, declines, faults)."""
    out = {}
    for engine, cells in provider.counters.snapshot().items():
        cell = cells.get(GCM)
        if cell and (cell["ops"] or cell["declined"] or cell["faults"]):
            out[engine] = (cell["ops"], cell["declined"], cell["faults"])
    return out


def expected_answers(row: str) -> list[Any]:
    """What every way must answer: cryptography's, but for the rows whose engines decide."""
    want = C_AESGCM(KEY)
    plain = [as_answer(want.encrypt(NONCE, data, aad)) for kind, data, aad in CALLS[:-2]]
    plain += [b"p" * 100, ("InvalidTag", None)]
    if row == "fails-a-check":
        return [("InvalidTag", None)] * len(CALLS)
    if row == "device-key":
        return [("DeviceKeyError", None)] * len(CALLS)
    if row == "required-declined":
        return [("OffloadRequired", {"d": "busy"})] * len(CALLS)
    if row == "required-with-a-window":
        plain[0] = ("OffloadRequired", {"f": "fault", "a": "below-threshold"})
    return plain


@pytest.mark.parametrize("row", list(TABLE))
def test_every_way_of_running_an_op_gives_the_same_answers_declines_and_counters(row):
    make_engines, policy, want_counts = TABLE[row]
    seen = {}
    for way, drive in WAYS.items():
        engines = make_engines()
        if way == "engine-route":
            engines = [WithSessions(engine) for engine in engines]
        provider = Provider(engines, policy)
        if way == "engine-route":
            assert provider.lane(GCM).engine_route is not None
        try:
            seen[way] = (drive(provider), counted(provider))
        finally:
            provider.close()
    for way, (answers, counts) in seen.items():
        assert answers == expected_answers(row), way
        assert counts == want_counts, way


def test_the_asyncio_lane_reads_no_private_name_of_another_object():
    source = pathlib.Path(cryptoffload.__file__).with_name("core") / "asyncio_lane.py"
    tree = ast.parse(source.read_text())
    private = [
        f"{ast.unparse(node.value)}.{node.attr} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not (node.attr.startswith("__") and node.attr.endswith("__"))
    ]
    assert private == []


def test_the_default_provider_is_kept_in_one_place():
    from cryptoffload.core import directpath, lane

    assert not hasattr(lane, "_default")
    was = directpath.DEFAULT_BOX[0]
    provider = Provider([], Policy())
    try:
        cryptoffload.set_default_provider(provider)
        assert directpath.DEFAULT_BOX[0] is provider
        assert lane.current() is provider
    finally:
        cryptoffload.set_default_provider(was)
        provider.close()
