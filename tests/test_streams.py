"""Hashes and MACs longer than one gathered op, held by an engine's running state (open_stream)."""

from __future__ import annotations

import hashlib
import hmac as std_hmac

import pytest
from cryptography.exceptions import AlreadyFinalized, InvalidSignature
from cryptography.hazmat.primitives import cmac as std_cmac
from doubles import DecliningEngine, StreamingEngine, TakeAllEngine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cryptoffload import Policy, Provider, _stream
from cryptoffload.ciphers import algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.errors import OffloadRequired
from cryptoffload.hashes import SHA256, Hash
from cryptoffload.hmac import HMAC

CHUNK = bytes(range(256)) * 4  # 1 KiB
KEY = bytes(range(32))


@pytest.fixture(autouse=True)
def small_limits(monkeypatch):
    monkeypatch.setattr(_stream, "GATHER_LIMIT", 4096)
    monkeypatch.setattr(_stream, "RETAIN_LIMIT", 64 * 1024)


def feed(ctx, chunks: int = 20) -> bytes:
    for i in range(chunks):
        ctx.update(CHUNK[i:] + CHUNK[:i])
    return b"".join(CHUNK[i:] + CHUNK[:i] for i in range(chunks))


def cell(provider: Provider, engine: str, alg: str) -> dict:
    return provider.counters.snapshot().get(engine, {}).get(alg, {})


def test_long_hash_runs_on_the_engine_stream_counted_once_with_every_byte():
    engine = StreamingEngine()
    provider = Provider([engine])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert engine.opened == 1 and engine.calls["update"] > 1
    assert cell(provider, "streaming", "sha256")["ops"] == 1
    assert cell(provider, "streaming", "sha256")["bytes"] == len(message)
    assert provider.counters.snapshot()["software"] == {}


def test_long_hmac_and_cmac_run_on_the_engine_stream():
    provider = Provider([StreamingEngine()])
    mac = HMAC(KEY, SHA256(), provider=provider)
    message = feed(mac)
    assert mac.finalize() == std_hmac.new(KEY, message, "sha256").digest()
    c = CMAC(algorithms.AES(KEY[:16]), provider=provider)
    feed(c)
    ref = std_cmac.CMAC(algorithms.AES(KEY[:16]))
    ref.update(message)
    assert c.finalize() == ref.finalize()
    assert cell(provider, "streaming", "hmac-sha256")["ops"] == 1
    assert cell(provider, "streaming", "cmac-aes-128")["ops"] == 1


def test_copy_of_an_engine_stream_forks_the_state():
    provider = Provider([StreamingEngine()])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    twin = h.copy()
    twin.update(b"more")
    assert h.finalize() == hashlib.sha256(message).digest()
    assert twin.finalize() == hashlib.sha256(message + b"more").digest()
    assert cell(provider, "streaming", "sha256")["ops"] == 2


@pytest.mark.parametrize("where", ["update", "finalize"])
def test_engine_fault_mid_stream_loses_nothing_software_redoes_the_message(where):
    engine = StreamingEngine(fail_at={where: 3 if where == "update" else 1})
    provider = Provider([engine])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "streaming", "sha256")["faults"] == 1
    assert cell(provider, "streaming", "sha256").get("ops", 0) == 0
    assert cell(provider, "software", "sha256")["ops"] == 1
    assert cell(provider, "software", "sha256")["bytes"] == len(message)


def test_fault_while_copying_leaves_the_copy_to_software_and_the_original_on_the_engine():
    provider = Provider([StreamingEngine(fail_at={"copy": 1})])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    twin = h.copy()
    assert twin.finalize() == hashlib.sha256(message).digest()
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "streaming", "sha256")["ops"] == 1
    assert cell(provider, "streaming", "sha256")["faults"] == 1
    assert cell(provider, "software", "sha256")["ops"] == 1


def test_mutating_the_callers_buffer_after_update_does_not_change_what_software_redoes():
    provider = Provider([StreamingEngine(fail_at={"finalize": 1})])
    h = Hash(SHA256(), provider=provider)
    message = feed(h, 5)
    buffer = bytearray(b"x" * 1000)
    h.update(buffer)
    buffer[:] = b"y" * 1000
    assert h.finalize() == hashlib.sha256(message + b"x" * 1000).digest()


def test_stream_longer_than_the_retain_limit_goes_to_software_declined_too_large():
    engine = StreamingEngine()
    provider = Provider([engine])
    h = Hash(SHA256(), provider=provider)
    message = feed(h, 80)  # 80 KiB > the 64 KiB kept for a redo
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "streaming", "sha256")["declined"] == {"too-large": 1}
    assert cell(provider, "software", "sha256")["ops"] == 1
    assert engine.closed == 1


def test_engine_without_streams_still_declines_long_messages_as_streaming():
    provider = Provider([TakeAllEngine()])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "takeall", "sha256")["declined"] == {"streaming": 1}
    assert cell(provider, "software", "sha256")["ops"] == 1


def test_stream_passes_over_a_declining_engine_to_the_next_one_counting_the_decline():
    first = StreamingEngine(name="first", fail_at={"open": 1})
    provider = Provider([first, StreamingEngine(name="second")])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "first", "sha256")["declined"] == {"busy": 1}
    assert cell(provider, "second", "sha256")["ops"] == 1


def test_stream_skips_an_engine_that_declines_every_op():
    provider = Provider([DecliningEngine(), StreamingEngine()])
    h = Hash(SHA256(), provider=provider)
    feed(h)
    h.finalize()
    assert cell(provider, "streaming", "sha256")["ops"] == 1


def test_required_offload_raises_when_the_stream_faults():
    provider = Provider(
        [StreamingEngine(fail_at={"finalize": 1})], policy=Policy(require=["sha256"])
    )
    h = Hash(SHA256(), provider=provider)
    feed(h)
    with pytest.raises(OffloadRequired):
        h.finalize()


# -- review: counting when no engine keeps the stream, the policy's max_size, the state machine ---


def test_fault_opening_a_stream_is_counted_once_not_also_as_a_decline():
    engine = StreamingEngine(fail_at={"open-fault": 1})
    provider = Provider([engine])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "streaming", "sha256")["faults"] == 1
    assert cell(provider, "streaming", "sha256")["declined"] == {}
    assert cell(provider, "software", "sha256")["ops"] == 1


def test_fault_opening_on_the_first_engine_then_the_second_keeps_the_stream():
    provider = Provider([StreamingEngine("first", {"open-fault": 1}), StreamingEngine("second")])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "first", "sha256")["faults"] == 1
    assert cell(provider, "first", "sha256")["declined"] == {}
    assert cell(provider, "second", "sha256")["ops"] == 1


@pytest.mark.parametrize(
    ("engine", "policy", "reason"),
    [
        (StreamingEngine(fail_at={"open": 1}), Policy(), "busy"),
        (StreamingEngine(), Policy(min_size={"sha256": 1 << 20}), "below-threshold"),
        (StreamingEngine(), Policy(deny=["sha256"]), "denied"),
        (TakeAllEngine("streaming"), Policy(), "streaming"),
    ],
    ids=["busy", "below-threshold", "denied", "no-open_stream"],
)
def test_when_no_engine_keeps_the_stream_each_decline_keeps_its_own_reason(engine, policy, reason):
    provider = Provider([engine], policy=policy)
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert cell(provider, "streaming", "sha256")["declined"] == {reason: 1}
    assert cell(provider, "streaming", "sha256")["faults"] == 0
    assert cell(provider, "software", "sha256")["ops"] == 1


def test_required_offload_names_each_engines_reason_when_none_keeps_the_stream():
    provider = Provider(
        [StreamingEngine("a", {"open": 1}), StreamingEngine("b", {"open-fault": 1})],
        policy=Policy(require=["sha256"]),
    )
    h = Hash(SHA256(), provider=provider)
    feed(h)
    with pytest.raises(OffloadRequired) as info:
        h.finalize()
    assert info.value.declines == {"a": "busy", "b": "fault"}
    assert cell(provider, "b", "sha256")["faults"] == 1
    assert cell(provider, "b", "sha256")["declined"] == {}
    assert cell(provider, "software", "sha256").get("ops", 0) == 0


def test_stream_growing_past_the_policy_max_size_leaves_the_engine_declined_too_large():
    engine = StreamingEngine()
    provider = Provider([engine], policy=Policy(max_size={"sha256": 8 * 1024}))
    h = Hash(SHA256(), provider=provider)
    message = feed(h, 20)
    assert h.finalize() == hashlib.sha256(message).digest()
    assert engine.largest <= 8 * 1024
    assert engine.closed == 1
    assert cell(provider, "streaming", "sha256")["declined"] == {"too-large": 1}
    assert cell(provider, "streaming", "sha256").get("ops", 0) == 0
    assert cell(provider, "software", "sha256")["ops"] == 1


def test_copy_of_an_engine_stream_keeps_the_policy_max_size():
    engine = StreamingEngine()
    provider = Provider([engine], policy=Policy(max_size={"sha256": 8 * 1024}))
    h = Hash(SHA256(), provider=provider)
    message = feed(h, 6)
    twin = h.copy()
    twin.update(CHUNK * 4)
    assert twin.finalize() == hashlib.sha256(message + CHUNK * 4).digest()
    assert h.finalize() == hashlib.sha256(message).digest()
    assert engine.largest <= 8 * 1024
    assert cell(provider, "streaming", "sha256")["ops"] == 1
    assert cell(provider, "streaming", "sha256")["declined"] == {"too-large": 1}
    assert cell(provider, "software", "sha256")["ops"] == 1


def test_copy_of_a_copy_and_the_lifecycle_errors_on_an_engine_stream():
    provider = Provider([StreamingEngine()])
    h = HMAC(KEY, SHA256(), provider=provider)
    message = feed(h)
    twin = h.copy()
    twin.update(b"a")
    grandchild = twin.copy()
    grandchild.update(b"b")
    assert h.finalize() == std_hmac.new(KEY, message, "sha256").digest()
    assert twin.finalize() == std_hmac.new(KEY, message + b"a", "sha256").digest()
    assert grandchild.finalize() == std_hmac.new(KEY, message + b"ab", "sha256").digest()
    for ctx in (h, twin, grandchild):
        with pytest.raises(AlreadyFinalized):
            ctx.finalize()
        with pytest.raises(AlreadyFinalized):
            ctx.update(b"x")
        with pytest.raises(AlreadyFinalized):
            ctx.copy()
    assert cell(provider, "streaming", "hmac-sha256")["ops"] == 3
    assert provider.counters.snapshot()["software"] == {}


def test_copy_after_a_fault_finishes_in_software_without_a_second_fault():
    engine = StreamingEngine(fail_at={"update": 3})
    provider = Provider([engine])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    twin = h.copy()
    twin.update(b"tail")
    assert h.finalize() == hashlib.sha256(message).digest()
    assert twin.finalize() == hashlib.sha256(message + b"tail").digest()
    assert engine.closed == 1
    assert cell(provider, "streaming", "sha256")["faults"] == 1
    assert cell(provider, "streaming", "sha256").get("ops", 0) == 0
    assert cell(provider, "software", "sha256")["ops"] == 2


def test_finalize_fault_then_finalize_again_is_already_finalized():
    engine = StreamingEngine(fail_at={"finalize": 1})
    provider = Provider([engine])
    h = Hash(SHA256(), provider=provider)
    message = feed(h)
    assert h.finalize() == hashlib.sha256(message).digest()
    with pytest.raises(AlreadyFinalized):
        h.finalize()
    with pytest.raises(AlreadyFinalized):
        h.update(b"x")
    assert engine.closed == 1
    assert cell(provider, "software", "sha256")["ops"] == 1


@pytest.mark.parametrize("fail_at", [{}, {"finalize": 1}], ids=["engine", "fault"])
def test_hmac_and_cmac_verify_through_a_stream(fail_at):
    provider = Provider([StreamingEngine(fail_at=fail_at)])
    good = HMAC(KEY, SHA256(), provider=provider)
    message = feed(good)
    tag = std_hmac.new(KEY, message, "sha256").digest()
    bad = good.copy()
    good.verify(tag)
    with pytest.raises(InvalidSignature):
        bad.verify(tag[:-1] + bytes([tag[-1] ^ 1]))
    ref = std_cmac.CMAC(algorithms.AES(KEY[:16]))
    ref.update(message)
    c = CMAC(algorithms.AES(KEY[:16]), provider=provider)
    feed(c)
    c.verify(ref.finalize())
    ops = sum(
        cell(provider, name, alg).get("ops", 0)
        for name in ("streaming", "software")
        for alg in ("hmac-sha256", "cmac-aes-128")
    )
    assert ops == 3


@pytest.mark.parametrize("kind", ["bytearray", "memoryview"])
def test_buffers_mutated_after_update_change_nothing_for_the_engine_or_a_copy(kind):
    # The first two land in the gathered buffer (the second opens the stream with it), the third
    # goes to the engine stream directly; the copy shares what was kept, and the finalize fault
    # makes software redo from it.
    engine = StreamingEngine(fail_at={"finalize": 2})
    provider = Provider([engine])
    h = Hash(SHA256(), provider=provider)
    bufs = [bytearray(c * 3000) for c in (b"a", b"b", b"c")]
    for buf in bufs:
        h.update(buf if kind == "bytearray" else memoryview(buf))
    assert engine.opened == 1 and engine.calls["update"] == 2
    twin = h.copy()
    for buf in bufs:
        buf[:] = b"x" * 3000
    twin.update(b"t")
    h.update(b"h")
    want = b"a" * 3000 + b"b" * 3000 + b"c" * 3000
    assert h.finalize() == hashlib.sha256(want + b"h").digest()
    assert twin.finalize() == hashlib.sha256(want + b"t").digest()
    assert cell(provider, "streaming", "sha256")["faults"] == 1
    assert cell(provider, "streaming", "sha256")["ops"] == 1
    assert cell(provider, "software", "sha256")["ops"] == 1


# -- properties: any mix of update sizes, copies, faults and finalizes ----------------------------

_FAULT_POINT = st.sampled_from([None, None, None, 1, 2, 3, 5])
_UPDATE = st.tuples(
    st.just("update"),
    st.integers(0, 63),
    st.sampled_from([0, 1, 15, 100, 255, 256, 257, 300, 700, 1100]),
    st.booleans(),
)
# Updates weigh most, so contexts pass the gather limit and reach (and outgrow) engine streams.
_ACTION = st.one_of(
    _UPDATE,
    _UPDATE,
    _UPDATE,
    st.tuples(st.just("copy"), st.integers(0, 63)),
    st.tuples(st.just("finalize"), st.integers(0, 63), st.sampled_from(["final", "verify", "bad"])),
)


def _context(alg: str, provider: Provider):
    if alg == "sha256":
        return Hash(SHA256(), provider=provider)
    if alg == "hmac-sha256":
        return HMAC(KEY, SHA256(), provider=provider)
    return CMAC(algorithms.AES(KEY[:16]), provider=provider)


def _reference(alg: str, message: bytes) -> bytes:
    if alg == "sha256":
        return hashlib.sha256(message).digest()
    if alg == "hmac-sha256":
        return std_hmac.new(KEY, message, "sha256").digest()
    ref = std_cmac.CMAC(algorithms.AES(KEY[:16]))
    ref.update(message)
    return ref.finalize()


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    alg=st.sampled_from(["sha256", "hmac-sha256", "cmac-aes-128"]),
    faults=st.fixed_dictionaries(
        {k: _FAULT_POINT for k in ("update", "copy", "finalize", "open", "open-fault")}
    ),
    second_engine=st.booleans(),
    max_size=st.none() | st.integers(300, 3000),
    require=st.booleans(),
    lead=st.sampled_from([0, 200, 257, 700, 1500, 2100]),
    actions=st.lists(_ACTION, min_size=2, max_size=30),
)
def test_any_sequence_matches_the_reference_and_counts_one_op_per_finished_context(
    monkeypatch, alg, faults, second_engine, max_size, require, lead, actions
):
    monkeypatch.setattr(_stream, "GATHER_LIMIT", 256)
    monkeypatch.setattr(_stream, "RETAIN_LIMIT", 2048)
    fail_at = {k: v for k, v in faults.items() if v is not None}
    engines = [StreamingEngine("first", fail_at)]
    if second_engine:
        engines.append(StreamingEngine("second"))
    policy = Policy(
        max_size={alg: max_size} if max_size is not None else None,
        require=[alg] if require else None,
    )
    provider = Provider(engines, policy=policy)
    contexts = [[_context(alg, provider), b"", False]]  # context, message so far, finalized
    required_raised = 0
    for action in [("update", 0, lead, False), *actions]:
        entry = contexts[action[1] % len(contexts)]
        ctx, message, done = entry
        if action[0] == "update":
            data = bytearray(bytes(range(256)) * 3)[: action[2]]
            if done:
                with pytest.raises(AlreadyFinalized):
                    ctx.update(data)
                continue
            ctx.update(data if action[3] else bytes(data))
            data[:] = b"\xee" * len(data)  # the caller reuses its buffer
            entry[1] = message + (bytes(range(256)) * 3)[: action[2]]
        elif action[0] == "copy":
            if done:
                with pytest.raises(AlreadyFinalized):
                    ctx.copy()
                continue
            contexts.append([ctx.copy(), message, False])
        else:
            if done:
                with pytest.raises(AlreadyFinalized):
                    ctx.finalize()
                continue
            entry[2] = True
            want = _reference(alg, message)
            how = action[2] if alg != "sha256" else "final"
            try:
                if how == "final":
                    assert ctx.finalize() == want
                elif how == "verify":
                    ctx.verify(want)
                else:
                    with pytest.raises(InvalidSignature):
                        ctx.verify(bytes([want[0] ^ 1]) + want[1:])
            except OffloadRequired:
                assert require
                required_raised += 1
    for entry in contexts:
        if not entry[2]:
            try:
                assert entry[0].finalize() == _reference(alg, entry[1])
            except OffloadRequired:
                assert require
                required_raised += 1

    snap = provider.counters.snapshot()
    cells = {name: snap.get(name, {}).get(alg, {}) for name in ("first", "second", "software")}
    ops = sum(c.get("ops", 0) for c in cells.values())
    assert ops + required_raised == len(contexts)
    if not required_raised:
        assert sum(c.get("bytes", 0) for c in cells.values()) == sum(len(e[1]) for e in contexts)
    if require:
        assert cells["software"].get("ops", 0) == 0
    for engine in engines:
        mine = cells[engine.name]
        assert mine.get("faults", 0) == engine.injected
        # Each message gives each engine at most one event: an op, a decline or a fault.
        events = mine.get("ops", 0) + sum(mine.get("declined", {}).values()) + engine.injected
        assert events <= len(contexts)
        assert not engine.live, "an engine stream was left open"
        assert engine.largest <= min(2048, max_size if max_size is not None else 2048)


def test_long_gmac_declined_by_a_streaming_engine_as_streaming_and_done_in_software():
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    from cryptoffload.gmac import GMAC

    engine = StreamingEngine()
    provider = Provider([engine])
    nonce = bytes(12)
    g = GMAC(KEY[:16], nonce, provider=provider)
    message = feed(g)
    enc = Cipher(algorithms.AES(KEY[:16]), modes.GCM(nonce)).encryptor()
    enc.authenticate_additional_data(message)
    enc.finalize()
    assert g.finalize() == enc.tag
    assert engine.opened == 0
    assert cell(provider, "streaming", "gmac-aes-128")["declined"] == {"streaming": 1}
    assert cell(provider, "streaming", "gmac-aes-128")["faults"] == 0
    assert cell(provider, "software", "gmac-aes-128")["ops"] == 1
