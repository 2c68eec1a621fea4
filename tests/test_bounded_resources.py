"""Streaming hashes in bounded memory; requests past engine limits split or declined."""

from __future__ import annotations

import hashlib
import os
import threading
import tracemalloc
from collections.abc import Callable

import cryptodev_standin
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher as CCipher
from cryptography.hazmat.primitives.ciphers import aead as c_aead
from doubles import TakeAllEngine

from cryptoffload import Policy, Provider, _stream, hashes, hmac, modes
from cryptoffload.aead import AESGCM
from cryptoffload.caam.recipes import cipher as caam_cipher
from cryptoffload.caam.recipes import hash as caam_hash
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.engines.cryptodev import CryptodevEngine

MiB = 1 << 20
CHUNK = 256 * 1024
TAKE_ALL = Policy(min_size={"*": 0})


def stream_peak(provider: Provider, total: int) -> tuple[int, bytes, bytes]:
    """Hash ``total`` bytes in CHUNK updates from one reused buffer (as a file read with
    readinto is): (traced peak above the start, our digest, hashlib's)."""
    chunk = bytearray(CHUNK)
    reference = hashlib.sha256()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        ctx = hashes.Hash(hashes.SHA256(), provider=provider)
        for i in range(total // CHUNK):
            chunk[:8] = i.to_bytes(8, "big")
            ctx.update(chunk)
            reference.update(chunk)
        digest = ctx.finalize()
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return peak, digest, reference.digest()


def cell(provider: Provider, engine: str, alg: str = "sha256") -> dict:
    return provider.counters.snapshot().get(engine, {}).get(alg, {})


def test_a_streaming_hash_in_software_keeps_memory_flat():
    peak, digest, want = stream_peak(Provider([]), 32 * MiB)
    assert digest == want
    assert peak < MiB  # a few objects: nothing grows with the message


def test_a_streaming_hash_gathers_at_most_the_gather_limit_when_no_engine_keeps_a_stream():
    provider = Provider([TakeAllEngine()], policy=TAKE_ALL)
    peak, digest, want = stream_peak(provider, 32 * MiB)
    assert digest == want
    assert _stream.GATHER_LIMIT <= peak < _stream.GATHER_LIMIT + 2 * CHUNK + MiB
    assert cell(provider, "takeall")["declined"] == {"streaming": 1}
    assert cell(provider, "software")["ops"] == 1


@pytest.mark.parametrize("bound", ["policy max_size", "retain limit"])
def test_an_engine_stream_keeps_at_most_its_bound_then_software_takes_over(monkeypatch, bound):
    """The context keeps what it sent to an engine stream (software redoes it after a fault), up
    to the policy's max_size for the engine or the retain limit: then software takes the rest."""
    limit = 8 * MiB
    policy = Policy(min_size={"*": 0}, max_size={"sha256": limit})
    if bound == "retain limit":
        monkeypatch.setattr(_stream, "RETAIN_LIMIT", limit)
        policy = TAKE_ALL
    cryptodev_standin.install()
    provider = Provider(["cryptodev:any"], policy=policy)
    peak, digest, want = stream_peak(provider, 32 * MiB)
    assert digest == want
    assert limit <= peak < limit + 2 * CHUNK + MiB
    assert cell(provider, "cryptodev:any")["declined"] == {"too-large": 1}
    assert cell(provider, "software")["ops"] == 1


# -- request limits -------------------------------------------------------------------------

KEY, IV, NONCE = bytes(range(16)), bytes(range(16, 32)), bytes(12)
LIMIT = 256  # the cryptodev engine's max_request here, to keep the requests small


def reference_cipher(mode: str, data: bytes) -> bytes:
    mode_obj = modes.ECB() if mode == "ecb" else getattr(modes, mode.upper())(IV)
    ctx = CCipher(algorithms.AES(KEY), mode_obj).encryptor()
    return ctx.update(data) + ctx.finalize()


def through(provider: Provider, mode: str, data: bytes) -> bytes:
    mode_obj = modes.ECB() if mode == "ecb" else getattr(modes, mode.upper())(IV)
    ctx = Cipher(algorithms.AES(KEY), mode_obj, provider=provider).encryptor()
    return ctx.update(data) + ctx.finalize()


@pytest.fixture
def small_cryptodev() -> tuple[Provider, cryptodev_standin.Device]:
    device = cryptodev_standin.install()
    engine = CryptodevEngine(allow_software=True, max_request=LIMIT)
    return Provider([engine], policy=TAKE_ALL), device


@pytest.mark.parametrize("mode", ["cbc", "ctr", "ecb"])
@pytest.mark.parametrize("size", [LIMIT - 16, LIMIT, LIMIT + 16, 3 * LIMIT + 16, 3 * LIMIT + 5])
def test_cryptodev_cipher_requests_past_max_request_are_split_never_cut(
    small_cryptodev, mode, size
):
    provider, device = small_cryptodev
    if size % 16 and mode != "ctr":
        size -= size % 16
    data = os.urandom(size)
    assert through(provider, mode, data) == reference_cipher(mode, data)
    sent = [r["len"] for r in device.seen if r["request"] == "CIOCCRYPT"]
    assert max(sent) <= LIMIT and sum(sent) == size  # every byte, in requests it takes
    alg = f"aes-128-{mode}"
    assert cell(provider, "cryptodev:any", alg) | {"bytes": 0} == {
        "ops": 1,
        "bytes": 0,
        "declined": {},
        "faults": 0,
    }


@pytest.mark.parametrize(
    ("size", "aad", "engine_takes"),
    [
        (LIMIT - 16, 0, True),
        (LIMIT, 0, True),
        (LIMIT + 1, 0, False),
        (16, 4096, True),
        (16, 4097, False),
    ],
)
def test_cryptodev_aead_past_its_limits_is_declined_too_large_and_answered_whole(
    small_cryptodev, size, aad, engine_takes
):
    provider, _ = small_cryptodev
    data, assoc = os.urandom(size), os.urandom(aad)
    sealed = AESGCM(KEY, provider=provider).encrypt(NONCE, data, assoc)
    assert sealed == c_aead.AESGCM(KEY).encrypt(NONCE, data, assoc)
    c = cell(provider, "cryptodev:any", "aes-128-gcm")
    if engine_takes:
        assert c["ops"] == 1 and c["declined"] == {}
    else:
        assert c["ops"] == 0 and c["declined"] == {"too-large": 1}
        assert cell(provider, "software", "aes-128-gcm")["ops"] == 1


@pytest.mark.parametrize("size", [LIMIT, LIMIT + 1, 5 * LIMIT + 3])
def test_cryptodev_hash_and_hmac_past_max_request_go_in_requests_it_takes(small_cryptodev, size):
    provider, device = small_cryptodev
    data = os.urandom(size)
    assert hashes.digest(data, hashes.SHA256(), provider=provider) == hashlib.sha256(data).digest()
    mac = hmac.HMAC(KEY, hashes.SHA256(), provider=provider)
    mac.update(data)
    assert mac.finalize() == hmac_reference(data)
    sent = [r["len"] for r in device.seen if r["request"] == "CIOCCRYPT"]
    assert max(sent) <= LIMIT and sum(sent) == 2 * size
    assert cell(provider, "cryptodev:any")["ops"] == 1
    assert cell(provider, "cryptodev:any", "hmac-sha256")["ops"] == 1


def hmac_reference(data: bytes) -> bytes:
    import hmac as std_hmac

    return std_hmac.new(KEY, data, "sha256").digest()


@pytest.fixture
def caam() -> tuple[Provider, Callable[[], int]]:
    provider = Provider(["caam:model=t2080"], policy=TAKE_ALL)
    model = provider.engines[0]._transport.model
    return provider, lambda: model.counters.jobs


@pytest.mark.parametrize("mode", ["cbc", "ctr"])
@pytest.mark.parametrize(
    ("size", "jobs"),
    [
        (caam_cipher.CHUNK - 16, 1),
        (caam_cipher.CHUNK, 1),
        (caam_cipher.CHUNK + 16, 2),
        (2 * caam_cipher.CHUNK + 48, 3),
    ],
)
def test_caam_cipher_past_its_chunk_runs_as_chained_jobs_never_cut(caam, mode, size, jobs):
    provider, job_count = caam
    data = os.urandom(size)
    before = job_count()
    assert through(provider, mode, data) == reference_cipher(mode, data)
    assert job_count() - before == jobs
    assert cell(provider, "caam:model=t2080", f"aes-128-{mode}")["ops"] == 1


@pytest.mark.parametrize("extra", [0, 64, 4096 + 3])
def test_caam_hash_past_its_chunk_runs_through_the_saved_context(caam, monkeypatch, extra):
    monkeypatch.setattr(caam_hash, "CHUNK", 4096)  # the model's SHA-256 with a context is slow
    provider, job_count = caam
    data = os.urandom(4096 + extra)
    before = job_count()
    assert hashes.digest(data, hashes.SHA256(), provider=provider) == hashlib.sha256(data).digest()
    assert (job_count() - before > 1) == (extra > 0)  # one job, or several through the context
    assert cell(provider, "caam:model=t2080")["ops"] == 1


def test_afalg_keeps_at_most_max_sockets_and_one_per_thread_open(monkeypatch):
    """Found by benchmarks/load.py in the rig: 8 threads with per-connection keys held 464
    descriptors (each thread kept up to 2 x MAX_TFMS operation sockets), on the way to the
    process's ~1024."""
    from test_afalg_standin import cbc, cipher_op, stand_in_engine

    from cryptoffload.engines import afalg

    monkeypatch.setattr(afalg, "MAX_SOCKETS", 12)
    engine = stand_in_engine("aes-128-cbc")
    threads, keys = 6, [bytes([i]) * 16 for i in range(6)]
    wrong: list[int] = []

    def work(t: int) -> None:
        for i in range(3 * len(keys)):
            key = keys[(i + t) % len(keys)]
            data = bytes([t, i]) * 16
            if engine.run(cipher_op(data, key)) != cbc(data, key):
                wrong.append(i)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    accepted = [s for tfm in engine.tfms.values() for s in tfm.accepted]
    assert wrong == [] and len(accepted) > threads * len(keys)  # they did accept anew
    assert sum(not s.closed for s in accepted) <= afalg.MAX_SOCKETS + threads
