"""Hashes and MACs longer than one gathered op, held by an engine's running state (open_stream)."""

from __future__ import annotations

import hashlib
import hmac as std_hmac

import pytest
from cryptography.hazmat.primitives import cmac as std_cmac
from doubles import DecliningEngine, StreamingEngine, TakeAllEngine

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
