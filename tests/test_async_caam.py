"""The CAAM engine's asyncio path: ``start`` on the engine, its completion fd serviced by the
loop, and cancelled awaits whose jobs keep their memory until they are reaped."""

from __future__ import annotations

import asyncio
import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM as C_AESGCM

from cryptoffload import Provider
from cryptoffload.aead import AESGCM
from cryptoffload.core.ops import AeadOp, RsaOp

KEY = bytes(range(16))


def nonce(i: int) -> bytes:
    return i.to_bytes(12, "big")


def test_start_on_the_model_gives_a_pending_already_done():
    provider = Provider(["caam:model=t2080"])
    engine = provider.engines[0]
    op = AeadOp("aes-128-gcm", "encrypt", KEY, nonce(1), b"data", b"h", 16)
    try:
        pending = engine.start(op)
        assert engine.completion_fd() is None
        assert pending.done()
        assert pending.result() == engine.run(op) == C_AESGCM(KEY).encrypt(nonce(1), b"data", b"h")
        from sample_keys import RSA_KEY

        rsa_op = RsaOp("rsa-2048-public", "raw", RSA_KEY.public_key(), value=5)
        assert engine.start(rsa_op) is None  # the PKHA's ops run whole
    finally:
        provider.close()


def test_200_gcm_coroutines_on_the_model_equal_cryptography():
    provider = Provider(["caam:model=t2080"])
    gcm = AESGCM(KEY, provider=provider)

    async def go():
        return await asyncio.gather(
            *(gcm.encrypt_async(nonce(i), bytes([i % 256]) * 100, None) for i in range(200))
        )

    try:
        want = C_AESGCM(KEY)
        assert asyncio.run(go()) == [
            want.encrypt(nonce(i), bytes([i % 256]) * 100, None) for i in range(200)
        ]
        assert provider.counters.snapshot()["caam:model=t2080"]["aes-128-gcm"]["ops"] == 200
    finally:
        provider.close()


def with_completion_fd(engine):
    """Give the engine's driver a completion fd (a pipe the test signals) and a service, as the
    driver of the device process will have them; returns the write end."""
    driver = engine._driver
    read, write = os.pipe()
    os.set_blocking(read, False)
    driver.completion_fd = read

    def service():
        os.read(read, 4096)
        driver.poll()

    driver.service = service
    return driver, write, read


def test_cancelled_awaits_keep_their_jobs_memory_until_reaped_through_the_fd():
    provider = Provider(["caam:model=t2080"])
    engine = provider.engines[0]
    model = engine._transport.model
    gcm = AESGCM(KEY, provider=provider)
    driver, signal, read = with_completion_fd(engine)
    assert engine.completion_fd() == read

    async def go():
        # One op first: the shared descriptor is built, so what DMA memory stays in use after
        # is the baseline every later job must return to.
        first = asyncio.ensure_future(gcm.encrypt_async(nonce(0), b"warm", None))
        await asyncio.sleep(0.01)
        assert not first.done()  # nothing completes but through the fd
        os.write(signal, b"x")
        await first
        before = driver.figures["dma_in_use"]
        model.stall()
        tasks = [
            asyncio.ensure_future(gcm.encrypt_async(nonce(i), bytes([i]) * 1024, b"h"))
            for i in range(1, 31)
        ]
        for _ in range(1000):
            if driver.figures["in_flight"] == 30:
                break
            await asyncio.sleep(0.001)
        assert driver.figures["in_flight"] == 30
        for task in tasks[:20]:
            task.cancel()
        await asyncio.sleep(0)
        model.unstall()  # the jobs run now, writing into their regions: still theirs
        os.write(signal, b"x")
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
        return before, outcomes

    try:
        before, outcomes = asyncio.run(go())
        assert all(isinstance(o, asyncio.CancelledError) for o in outcomes[:20])
        want = C_AESGCM(KEY)
        assert outcomes[20:] == [
            want.encrypt(nonce(i), bytes([i]) * 1024, b"h") for i in range(21, 31)
        ]
        figures = driver.figures
        assert figures["in_flight"] == 0
        assert figures["dma_in_use"] == before
        assert figures["errors"] == {}  # no job met freed memory (the model faults on it)
        cell = provider.counters.snapshot()["caam:model=t2080"]["aes-128-gcm"]
        assert cell["ops"] == 31  # the cancelled ones were done by the block, and counted
    finally:
        provider.close()
        os.close(signal)
        os.close(read)
