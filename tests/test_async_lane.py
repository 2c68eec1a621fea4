"""The asyncio lane on its own: completion fds watched by the loop, many ops in flight from one
thread, cancellation, declines and faults after a start, and the executor for other engines."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as C_AESGCM
from doubles import TakeAllEngine
from fd_engine import FdEngine

from cryptoffload import Provider, using
from cryptoffload.aead import AESGCM
from cryptoffload.core import asyncio_lane
from cryptoffload.core.policy import Policy
from cryptoffload.engines.pending import Pending
from cryptoffload.errors import OffloadRequired

KEY = bytes(range(16))
GCM = ["aes-128-gcm"]


def nonce(i: int) -> bytes:
    return i.to_bytes(12, "big")


def cell(provider: Provider, engine: str, alg: str = "aes-128-gcm") -> dict:
    """The engine's counter cell for ``alg`` (ops 0 when it has none)."""
    return provider.counters.snapshot()[engine].get(alg, {"ops": 0})


async def until(condition, seconds: float = 5.0) -> None:
    """Let the loop run until ``condition()`` holds."""
    for _ in range(int(seconds / 0.001)):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never held")


def test_200_gcm_ops_are_in_flight_together_from_one_thread():
    engine = FdEngine(algorithms=GCM)
    provider = Provider([engine])
    gcm = AESGCM(KEY, provider=provider)
    engine.gate.clear()  # nothing completes until all 200 are started

    async def go():
        tasks = [
            asyncio.ensure_future(gcm.encrypt_async(nonce(i), bytes([i % 256]) * 64, b"h"))
            for i in range(200)
        ]
        await until(lambda: engine.started == 200)
        assert engine.in_flight == 200
        engine.gate.set()
        return await asyncio.wait_for(asyncio.gather(*tasks), 10), threading.get_ident()

    try:
        results, loop_thread = asyncio.run(go())
        want = C_AESGCM(KEY)
        assert results == [want.encrypt(nonce(i), bytes([i % 256]) * 64, b"h") for i in range(200)]
        assert engine.max_in_flight == 200
        assert engine.service_threads == {loop_thread}  # completions came through the fd
        assert cell(provider, "fdengine")["ops"] == 200
        assert cell(provider, "software")["ops"] == 0
    finally:
        provider.close()


def test_the_completion_fd_is_watched_once_per_loop_and_engine():
    engine = FdEngine(algorithms=GCM)
    provider = Provider([engine])
    gcm = AESGCM(KEY, provider=provider)

    async def go():
        loop = asyncio.get_running_loop()
        added = []
        add_reader = loop.add_reader

        def spy(fd, callback, *args):
            added.append(fd)
            return add_reader(fd, callback, *args)

        loop.add_reader = spy
        for i in range(5):
            await gcm.encrypt_async(nonce(i), b"data", None)
        await asyncio.gather(*(gcm.encrypt_async(nonce(i), b"d", None) for i in range(20)))
        return added

    try:
        assert asyncio.run(go()) == [engine.completion_fd()]
        assert engine.services >= 1
    finally:
        provider.close()


def test_a_failed_tag_raises_invalid_tag_and_releases_no_plaintext():
    engine = FdEngine(algorithms=GCM)
    provider = Provider([engine])
    gcm = AESGCM(KEY, provider=provider)
    sealed = C_AESGCM(KEY).encrypt(nonce(1), b"secret plaintext", b"h")
    altered = sealed[:-1] + bytes([sealed[-1] ^ 0x80])

    async def go():
        return await asyncio.gather(
            gcm.decrypt_async(nonce(1), altered, b"h"),
            gcm.decrypt_async(nonce(1), sealed, b"h"),
            return_exceptions=True,
        )

    try:
        bad, good = asyncio.run(go())
        assert type(bad) is InvalidTag and b"secret" not in repr(bad).encode()
        assert good == b"secret plaintext"
        # The engine's answer: counted for it, not asked of software.
        assert cell(provider, "fdengine")["ops"] == 2
        assert cell(provider, "software")["ops"] == 0
    finally:
        provider.close()


def test_cancelled_awaits_leave_no_pending_and_count_what_the_engine_did():
    engine = FdEngine(algorithms=GCM)
    provider = Provider([engine])
    gcm = AESGCM(KEY, provider=provider)
    engine.gate.clear()
    pendings: list[weakref.ref] = []
    start = engine.start

    def tracked(op):
        pending = start(op)
        pendings.append(weakref.ref(pending))
        return pending

    engine.start = tracked

    async def go():
        tasks = [
            asyncio.ensure_future(gcm.encrypt_async(nonce(i), b"x" * 32, None)) for i in range(50)
        ]
        await until(lambda: engine.started == 50)
        for task in tasks[:40]:
            task.cancel()
        engine.gate.set()
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
        await until(lambda: engine.in_flight == 0)
        return outcomes

    try:
        outcomes = asyncio.run(go())
        assert all(isinstance(o, asyncio.CancelledError) for o in outcomes[:40])
        assert all(isinstance(o, bytes) for o in outcomes[40:])
        gc.collect()
        assert [ref for ref in pendings if ref() is not None] == []
        # The engine did all 50; nobody asked software to redo the cancelled ones.
        assert cell(provider, "fdengine")["ops"] == 50
        assert cell(provider, "software")["ops"] == 0
    finally:
        provider.close()


def counts_of(make_engine, calls):
    """Counters after ``calls(gcm)`` sync and after the same awaited, each on a fresh provider."""
    out = []
    for awaited in (False, True):
        engine = make_engine()
        provider = Provider([engine])
        gcm = AESGCM(KEY, provider=provider)
        try:
            if awaited:

                async def go(gcm=gcm):
                    outcomes = []
                    for kind, args in calls:
                        try:
                            outcomes.append(await getattr(gcm, f"{kind}_async")(*args))
                        except Exception as exc:
                            outcomes.append(type(exc))
                    return outcomes

                outcomes = asyncio.run(go())
            else:
                outcomes = []
                for kind, args in calls:
                    try:
                        outcomes.append(getattr(gcm, kind)(*args))
                    except Exception as exc:
                        outcomes.append(type(exc))
            out.append((outcomes, provider.counters.snapshot()))
        finally:
            provider.close()
    return out


SEALED = C_AESGCM(KEY).encrypt(nonce(7), b"payload", None)
CALLS = [
    ("encrypt", (nonce(1), b"a" * 40, None)),
    ("decrypt", (nonce(7), SEALED, None)),
    ("decrypt", (nonce(7), SEALED[:-1] + b"\x00", None)),
    ("encrypt", (nonce(2), b"b" * 10, b"aad")),
]


@pytest.mark.parametrize(
    "options",
    [
        {"decline": ("encrypt",)},  # declined by start, before anything is in flight
        {"busy": ("decrypt",)},  # declined after it started
        {"fault": ("encrypt",)},  # failed after it started
        {"busy": ("encrypt",), "fault": ("decrypt",)},
    ],
    ids=["declined-at-start", "declined-later", "faulted", "both"],
)
def test_declines_and_faults_fall_back_to_software_counted_as_sync(options):
    (sync_out, sync_counts), (async_out, async_counts) = counts_of(
        lambda: FdEngine(algorithms=GCM, **options), CALLS
    )
    assert async_out == sync_out
    assert async_out[2] is InvalidTag
    assert async_counts == sync_counts
    assert async_counts["software"]["aes-128-gcm"]["ops"] > 0


def test_a_policy_window_and_require_hold_as_in_the_sync_path():
    policy = Policy(min_size={"aes-128-gcm": 20})
    results = []
    for awaited in (False, True):
        provider = Provider([FdEngine(algorithms=GCM)], policy)
        gcm = AESGCM(KEY, provider=provider)
        try:
            if awaited:

                async def go(gcm=gcm):
                    return [
                        await gcm.encrypt_async(nonce(1), b"short", None),
                        await gcm.encrypt_async(nonce(2), b"long" * 10, None),
                    ]

                out = asyncio.run(go())
            else:
                out = [
                    gcm.encrypt(nonce(1), b"short", None),
                    gcm.encrypt(nonce(2), b"long" * 10, None),
                ]
            results.append((out, provider.counters.snapshot()))
        finally:
            provider.close()
    assert results[0] == results[1]
    assert results[1][1]["fdengine"]["aes-128-gcm"]["declined"] == {"below-threshold": 1}

    required = Provider([FdEngine(algorithms=GCM, decline=("encrypt",))], Policy(require=GCM))
    try:
        with pytest.raises(OffloadRequired):
            asyncio.run(AESGCM(KEY, provider=required).encrypt_async(nonce(1), b"x" * 30, None))
    finally:
        required.close()


class RecordingExecutor(ThreadPoolExecutor):
    def __init__(self):
        super().__init__(max_workers=4)
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):
        self.calls += 1
        return super().submit(fn, *args, **kwargs)


def run_with_executor(coro_fn):
    executor = RecordingExecutor()

    async def go():
        asyncio.get_running_loop().set_default_executor(executor)
        return await coro_fn()

    return asyncio.run(go()), executor.calls


def test_engines_without_start_run_in_the_default_executor():
    engine = TakeAllEngine("plain", GCM)
    threads = []
    run = engine.run

    def recording(op):
        threads.append(threading.get_ident())
        return run(op)

    engine.run = recording
    provider = Provider([engine])
    gcm = AESGCM(KEY, provider=provider)
    try:
        sealed, calls = run_with_executor(lambda: gcm.encrypt_async(nonce(3), b"data", None))
        assert sealed == C_AESGCM(KEY).encrypt(nonce(3), b"data", None)
        assert calls == 1 and threads and threads[0] != threading.get_ident()
        assert cell(provider, "plain")["ops"] == 1
    finally:
        provider.close()


def test_software_only_runs_small_ops_inline_and_large_ones_in_the_executor():
    from cryptoffload.core.asyncio_lane import INLINE_BYTES

    provider = Provider(["software"])
    gcm = AESGCM(KEY)
    big = bytes(INLINE_BYTES + 1)
    try:
        with using(provider):
            sealed, calls = run_with_executor(lambda: gcm.encrypt_async(nonce(4), b"d", None))
            assert sealed == C_AESGCM(KEY).encrypt(nonce(4), b"d", None)
            assert calls == 0  # no thread hop for a 1-byte op
            sealed, calls = run_with_executor(lambda: gcm.encrypt_async(nonce(4), big, None))
            assert sealed == C_AESGCM(KEY).encrypt(nonce(4), big, None)
            assert calls == 1  # the using block's provider is in force in the executor too
        assert cell(provider, "software")["ops"] == 2
    finally:
        provider.close()


def test_a_start_that_gives_none_runs_the_op_whole_in_the_executor():
    engine = FdEngine(algorithms=GCM)
    engine.start = lambda op: None
    provider = Provider([engine])
    gcm = AESGCM(KEY, provider=provider)
    try:
        sealed, calls = run_with_executor(lambda: gcm.encrypt_async(nonce(5), b"d", None))
        assert sealed == C_AESGCM(KEY).encrypt(nonce(5), b"d", None)
        assert calls == 1
        assert cell(provider, "fdengine")["ops"] == 1
    finally:
        provider.close()


def test_a_pending_not_done_without_an_fd_is_waited_for_in_the_executor():
    engine = TakeAllEngine("nofd", GCM)

    def start(op):
        pending = Pending(wait=lambda: pending.set_result(engine.run(op)))
        return pending

    engine.start = start
    provider = Provider([engine])
    gcm = AESGCM(KEY, provider=provider)
    try:
        sealed, calls = run_with_executor(lambda: gcm.encrypt_async(nonce(6), b"d", None))
        assert sealed == C_AESGCM(KEY).encrypt(nonce(6), b"d", None)
        assert calls == 1
        assert asyncio_lane.completion_fd(engine) is None
        assert cell(provider, "nofd")["ops"] == 1
    finally:
        provider.close()


def test_pending_settles_once_and_runs_late_callbacks_at_once():
    pending = Pending()
    seen = []
    pending.add_done_callback(lambda p: seen.append(("early", p.result())))
    assert not pending.done()
    pending.set_result(5)
    pending.add_done_callback(lambda p: seen.append(("late", p.result())))
    assert seen == [("early", 5), ("late", 5)]
    with pytest.raises(RuntimeError):
        pending.set_exception(ValueError())
    failed = Pending.failed(InvalidTag())
    with pytest.raises(InvalidTag):
        failed.result()
    with pytest.raises(TimeoutError):
        Pending().result(timeout=0.01)


def test_a_cross_checked_engine_is_run_whole_in_the_executor_and_checked():
    engine = FdEngine(algorithms=GCM)
    provider = Provider([engine], cross_check=1.0)
    gcm = AESGCM(KEY, provider=provider)
    try:
        sealed, calls = run_with_executor(lambda: gcm.encrypt_async(nonce(8), b"d", None))
        assert sealed == C_AESGCM(KEY).encrypt(nonce(8), b"d", None)
        assert calls == 1 and engine.started == 0  # its start would skip the check
        snapshot = provider.counters.snapshot()["fdengine"]["aes-128-gcm"]
        assert snapshot["ops"] == 1 and snapshot["checked"] == 1
    finally:
        provider.close()
