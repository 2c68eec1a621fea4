"""The synthetic engine: its spec, its answers (OpenSSL's), its curve (wall time, never less)."""

from __future__ import annotations

import logging
import os
import time

import pytest
from cryptography.exceptions import InvalidTag

from cryptoffload import Policy, Provider, engines
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.engines.synthetic import SyntheticEngine, from_spec
from cryptoffload.errors import BadEngineSpec
from cryptoffload.hashes import SHA256, digest
from cryptoffload.hmac import HMAC
from cryptoffload.modes import CBC
from cryptoffload.tools.bench.cli import engine_list

TAKE_ALL = Policy(min_size={"*": 0})


def test_spec_units_defaults_and_the_name_that_builds_it_again():
    engine = from_spec("latency=1.5ms,throughput=400MiB/s,algs=aes-*-gcm+sha256")
    assert engine.latency == pytest.approx(1.5e-3)
    assert engine.throughput == 400 * 1024**2
    assert engine.name == "synthetic:latency=1500us,throughput=400MiB/s,algs=aes-*-gcm+sha256"
    again = engines.from_spec(engine.name)
    assert (again.latency, again.throughput, again.name) == (
        engine.latency,
        engine.throughput,
        engine.name,
    )
    default = engines.from_spec("synthetic")
    assert default.name == "synthetic:latency=20us,throughput=2048MiB/s"
    assert default.probe().algorithms == {"aes-128-gcm", "aes-192-gcm", "aes-256-gcm"}
    assert from_spec("throughput=1GB/s").throughput == 1e9
    assert from_spec("latency=500ns").latency == pytest.approx(5e-7)


@pytest.mark.parametrize(
    "arg",
    [
        "latency=fast",
        "latency=20",
        "speed=1",
        "latency=1us,latency=2us",
        "throughput=0MiB/s",
        "throughput=12parsecs",
    ],
)
def test_a_malformed_spec_is_refused_before_any_probe(arg):
    with pytest.raises(BadEngineSpec, match="synthetic"):
        from_spec(arg)


def test_an_algs_list_matching_nothing_is_unavailable_with_its_reason():
    caps = from_spec("algs=nonesuch").probe()
    assert not caps.available and "matches no algorithm" in caps.reason


def test_never_discovered_only_named():
    assert "synthetic" in engines.NOT_DISCOVERED
    assert not any(isinstance(e, SyntheticEngine) for e in engines.discover())


def test_engine_lists_keep_a_specs_options_together():
    assert engine_list("synthetic:latency=20us,throughput=2GiB/s,passthrough") == [
        "synthetic:latency=20us,throughput=2GiB/s",
        "passthrough",
    ]


def test_answers_equal_softwares_and_a_bad_tag_releases_nothing():
    spec = "synthetic:latency=0us,throughput=1000GB/s,algs=aes-*-gcm+sha256+hmac-sha256+aes-*-cbc"
    offload, software = Provider([spec], policy=TAKE_ALL), Provider([])
    key, nonce = os.urandom(32), os.urandom(12)
    for size in (0, 1, 16, 100, 4096, 70000):
        data, aad = os.urandom(size), os.urandom(size % 40)
        sealed = AESGCM(key, provider=offload).encrypt(nonce, data, aad)
        assert sealed == AESGCM(key, provider=software).encrypt(nonce, data, aad)
        assert AESGCM(key, provider=offload).decrypt(nonce, sealed, aad) == data
        bad = sealed[:-1] + bytes([sealed[-1] ^ 1])
        with pytest.raises(InvalidTag):
            AESGCM(key, provider=offload).decrypt(nonce, bad, aad)
        assert digest(data, SHA256(), provider=offload) == digest(data, SHA256())
        mac = HMAC(key, SHA256(), provider=offload)
        mac.update(data)
        assert mac.finalize() == _hmac(key, data)
        block = data[: size - size % 16]
        ct = Cipher(algorithms.AES(key), CBC(nonce + nonce[:4]), provider=offload).encryptor()
        ref = Cipher(algorithms.AES(key), CBC(nonce + nonce[:4]), provider=software).encryptor()
        assert ct.update(block) + ct.finalize() == ref.update(block) + ref.finalize()
    counted = offload.counters.snapshot()[offload_name(offload)]
    assert counted["aes-256-gcm"]["ops"] >= 12 and counted["sha256"]["ops"] == 6


def offload_name(provider: Provider) -> str:
    return next(name for name in provider.counters.snapshot() if name.startswith("synthetic"))


def _hmac(key: bytes, data: bytes) -> bytes:
    mac = HMAC(key, SHA256(), provider=Provider([]))
    mac.update(data)
    return mac.finalize()


def test_an_op_takes_at_least_its_curve_in_wall_time():
    engine = from_spec("latency=20ms,throughput=1MiB/s")
    aead = AESGCM(bytes(16), provider=Provider([engine], policy=TAKE_ALL))
    for size in (16, 10240):  # 20 ms, then 20 ms + 10 KiB at 1 MiB/s (29.8 ms)
        least = 0.020 + size / 1024**2
        start = time.perf_counter()
        aead.encrypt(bytes(12), bytes(size), None)
        took = time.perf_counter() - start
        assert least <= took < least + 2.0  # never early; the upper bound only for sanity
    assert engine.figures["jobs"] == 2 and engine.figures["late"] == 0
    assert engine.figures["waited_s"] > 0.04


def test_a_curve_faster_than_openssl_is_late_counted_and_logged_once(caplog):
    engine = from_spec("latency=0us,throughput=1000000GB/s")
    aead = AESGCM(bytes(16), provider=Provider([engine], policy=TAKE_ALL))
    with caplog.at_level(logging.WARNING, logger="cryptoffload.engines.synthetic"):
        for _ in range(3):
            aead.encrypt(bytes(12), bytes(4096), None)
    assert engine.figures["late"] == 3 and engine.figures["jobs"] == 3
    (record,) = caplog.records
    assert "late" in record.getMessage() and engine.name in record.getMessage()
    assert bytes(16).hex() not in record.getMessage()  # never the key


def test_unclaimed_algorithms_go_to_software():
    provider = Provider(["synthetic:latency=0us,algs=aes-128-gcm"], policy=TAKE_ALL)
    digest(b"abc", SHA256(), provider=provider)
    assert provider.counters.snapshot()["software"]["sha256"]["ops"] == 1
