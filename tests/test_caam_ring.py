"""The CAAM driver's ring on the model: reset, jobs in flight from many threads, batches, faults."""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import time
from typing import Any

import pytest

from cryptoffload.caam import regs, status
from cryptoffload.caam.jr.driver import (
    RNG_ENTROPY_DELAYS,
    RNG_INSTANTIATE,
    RNG_INSTANTIATE_NO_SK,
    CaamError,
    CaamUnavailable,
    Driver,
    Job,
    Request,
    RingFull,
    RingTimeout,
    check,
)
from cryptoffload.caam.jr.jobs import FLUSHED
from cryptoffload.caam.jr.transport import ModelTransport

RING0 = regs.jr_base(0)


def ring_reg(offset: int) -> int | None:
    """The ring-0 register name's offset inside the page, or None outside ring 0."""
    return offset - RING0 if RING0 <= offset < RING0 + regs.PAGE_SIZE else None


class Wrapped:
    """A transport over a ModelTransport that records register accesses; subclasses bend it."""

    def __init__(self, inner: ModelTransport) -> None:
        self.inner = inner
        self.model = inner.model
        self.name = inner.name
        self.svr = inner.svr
        self.bounce_bytes = 0
        self.log: list[tuple[str, int, int]] = []

    def read32(self, offset: int) -> int:
        value = self.inner.read32(offset)
        self.log.append(("r", offset, value))
        return value

    def write32(self, offset: int, value: int) -> None:
        self.log.append(("w", offset, value))
        self.inner.write32(offset, value)

    def alloc(self, size: int, align: int = 64) -> int:
        return self.inner.alloc(size, align)

    def free(self, phys: int) -> None:
        self.inner.free(phys)

    def write(self, phys: int, data: bytes | bytearray | memoryview) -> None:
        self.inner.write(phys, data)

    def read(self, phys: int, n: int) -> bytes:
        return self.inner.read(phys, n)

    def read_into(self, phys: int, out: bytearray | memoryview) -> None:
        self.inner.read_into(phys, out)

    def close(self) -> None:
        self.inner.close()

    def writes(self, reg: int) -> list[int]:
        return [v for kind, off, v in self.log if kind == "w" and off == RING0 + reg]


class Reordering(Wrapped):
    """Hands the output ring's entries back in reverse order whenever it is read two or more at a
    time: what a block with several DECOs does when a later job finishes first."""

    outring = 0
    entry = 8

    def read(self, phys: int, n: int) -> bytes:
        raw = self.inner.read(phys, n)
        if self.outring <= phys < self.outring + 64 * self.entry and n > self.entry:
            entries = [raw[i : i + self.entry] for i in range(0, n, self.entry)]
            raw = b"".join(reversed(entries))
        return raw


class Later(Wrapped):
    """A block that completes jobs later, as silicon does, not inside the IRJAR write: added jobs
    reach the model at the first ORSFR read ``latency`` seconds after their IRJAR write (never,
    with None, until the test lets them through), and occupy slots (IRSAR) meanwhile."""

    def __init__(self, inner: ModelTransport, latency: float | None = 0.0005) -> None:
        super().__init__(inner)
        self.latency = latency
        self.held: list[tuple[float, int]] = []
        self.lock = threading.Lock()

    def release(self) -> None:
        """Every held job reaches the block now."""
        with self.lock:
            self._forward(len(self.held))

    def _forward(self, k: int) -> None:
        n = sum(m for _, m in self.held[:k])
        del self.held[:k]
        if n:
            self.inner.write32(RING0 + regs.IRJAR, n)

    def read32(self, offset: int) -> int:
        reg = ring_reg(offset)
        with self.lock:
            if reg == regs.ORSFR and self.held and self.latency is not None:
                now = time.monotonic()
                self._forward(sum(1 for t, _ in self.held if now - t >= self.latency))
            value = self.inner.read32(offset)
            if reg == regs.IRSAR:
                value -= sum(m for _, m in self.held)
            return value

    def write32(self, offset: int, value: int) -> None:
        with self.lock:
            self.log.append(("w", offset, value))
            if ring_reg(offset) == regs.IRJAR:
                self.held.append((time.monotonic(), value))
                return
            self.inner.write32(offset, value)


class Counting(Wrapped):
    """Keeps the DMA regions the driver holds from the transport (alloc'd, not yet freed)."""

    def __init__(self, inner: ModelTransport) -> None:
        super().__init__(inner)
        self.live: set[int] = set()

    def alloc(self, size: int, align: int = 64) -> int:
        phys = self.inner.alloc(size, align)
        self.live.add(phys)
        return phys

    def free(self, phys: int) -> None:
        self.live.remove(phys)
        self.inner.free(phys)


class Untouchable:
    """A transport for a part without the SEC: any register access fails the test."""

    name = "standin:t2080-nosec"
    svr = 0x85300011  # T2080 without the E bit
    bounce_bytes = 0

    def read32(self, offset: int) -> int:
        raise AssertionError(f"register 0x{offset:x} read on a part without the SEC")

    def write32(self, offset: int, value: int) -> None:
        raise AssertionError(f"register 0x{offset:x} written on a part without the SEC")

    def alloc(self, size: int, align: int = 64) -> int:
        raise AssertionError("DMA memory asked of a part without the SEC")

    free = write = read = read_into = alloc

    def close(self) -> None:
        pass


def model_transport(part: str = "t2080", seed: bytes = b"ring tests") -> ModelTransport:
    return ModelTransport.for_part(part, seed=seed)


@pytest.fixture(params=["t2080", "t1040", "imx7d", "t2080-long"])
def drv(request: pytest.FixtureRequest) -> Driver:
    part = request.param.removesuffix("-long")
    return Driver(model_transport(part), long_pointers=request.param.endswith("-long"), depth=8)


def sha_job(d: Driver, msg: bytes) -> Request:
    """SHA-256 of ``msg``: the message in a region of its own, the digest collected at reap."""
    p_msg, p_out = d.put(msg), d.alloc(32)
    b = d.builder().operation(2, "SHA256", encrypt=True)
    b.fifo_load(2, "MSG", pointer=p_msg, length=len(msg), last2=True)
    b.store(2, "context", length=32, pointer=p_out)
    return Request(b.words(), (p_msg, p_out), ((p_out, 32),))


def go(d: Driver, req: Request) -> Job:
    return d.submit(req.words, owned=req.owned, collect=req.collect)


def run_sha(d: Driver, msg: bytes) -> bytes:
    (digest,) = go(d, sha_job(d, msg)).result()
    return bytes(digest)


# ---------------------------------------------------------------------- discovery and reset


def test_discovery_reads_the_block(drv: Driver) -> None:
    part = drv.transport.model.part
    assert drv.byteorder == part.byteorder
    assert drv.caps.era == part.era and drv.caps.gcm
    assert drv.caps.counts["JR"] == part.job_rings and drv.caps.counts["DECO"] == part.decos
    assert drv.pkha_bits == 4096
    assert drv.pointer_size == (8 if drv.long_pointers else 4)
    assert bool(drv.transport.model.long_pointers) is drv.long_pointers


def test_pointer_size_follows_mcfgr_unless_asked() -> None:
    t = model_transport()
    assert Driver(t).pointer_size == 4  # PS set, MCFGR.LONG_PTR clear: 32-bit
    t.write32(regs.MCFGR, regs.MCFGR_LONG_PTR)
    assert Driver(t).pointer_size == 8  # what the block is set to
    assert Driver(t, long_pointers=False).pointer_size == 4
    assert not t.read32(regs.MCFGR) & regs.MCFGR_LONG_PTR
    with pytest.raises(CaamUnavailable, match=r"cannot use long pointers \(CTPR_MS.PS is clear\)"):
        Driver(model_transport("imx7d"), long_pointers=True)


def test_the_ring_is_reset_with_the_two_write_sequence_then_armed() -> None:
    t = Wrapped(model_transport())
    d = Driver(t, ring=0, depth=16)
    ring = [(k, off - RING0, v) for k, off, v in t.log if ring_reg(off) is not None]
    writes = [(off, v) for k, off, v in ring if k == "w"]
    assert writes[:2] == [(regs.JRCFGR_LS, regs.JRCFGR_IMSK), (regs.JRCR, regs.JRCR_RESET)]
    second = writes.index((regs.JRCR, regs.JRCR_RESET), 2)
    halted = [v for k, off, v in ring[: ring.index(("w", regs.JRCR, 1), 2)] if off == regs.JRINTR]
    assert halted[-1] & regs.JRINTR_HALT_MASK == regs.JRINTR_HALT_DONE
    after = dict(writes[second + 1 :])
    assert after[regs.IRBAR_LO] == d._ring.inring and after[regs.ORBAR_LO] == d._ring.outring
    assert after[regs.IRSR] == after[regs.ORSR] == 16
    assert after[regs.JRCFGR_LS] == regs.JRCFGR_IMSK  # polled: interrupts masked
    assert t.read32(RING0 + regs.JRCR) == 0


def test_a_ring_left_with_jobs_is_flushed_by_the_reset() -> None:
    t = model_transport()
    first = Driver(t, depth=4)
    t.model.stall()
    stuck = first.submit(sha_job(first, b"left behind").words)
    second = Driver(t, depth=4)  # a new process claims the ring: the reset returns the job
    assert t.model.counters.flushed == 1 and not stuck.done
    t.model.unstall()
    assert run_sha(second, b"abc") == hashlib.sha256(b"abc").digest()


def test_a_ring_that_never_halts_is_refused() -> None:
    class Stuck(Wrapped):
        def read32(self, offset: int) -> int:
            return 0 if ring_reg(offset) == regs.JRINTR else super().read32(offset)

    with pytest.raises(CaamUnavailable, match="did not halt"):
        Driver(Stuck(model_transport()), timeout=0.05)


def test_no_such_ring() -> None:
    with pytest.raises(CaamUnavailable, match="has 3 job ring"):
        Driver(model_transport("imx7d"), ring=3)
    assert Driver(model_transport("imx7d"), ring=2).run(RNG_INSTANTIATE) & 0xFF == 0


@pytest.mark.parametrize(
    "transport", [Untouchable(), model_transport("t2080-nosec")], ids=["standin", "model"]
)
def test_a_part_without_the_sec_is_refused_before_any_register(transport: Any) -> None:
    with pytest.raises(CaamUnavailable) as err:
        Driver(transport)
    assert "has no SEC block (SVR 0x85300011 lacks the E bit 0x00080000)" in str(err.value)


# ---------------------------------------------------------------------- jobs


def test_submit_and_reap(drv: Driver) -> None:
    msgs = [os.urandom(n) for n in (0, 1, 55, 64, 1000)]
    for msg in msgs:
        assert run_sha(drv, msg) == hashlib.sha256(msg).digest()
    job = drv.submit(sha_job(drv, b"x").words)
    assert job.wait() == 0 and job.done and job.outputs == []
    assert drv.figures["in_flight"] == 0


def test_outputs_into_a_buffer_of_the_caller() -> None:
    d = Driver(model_transport())
    req = sha_job(d, b"into")
    out = bytearray(32)
    job = d.submit(req.words, owned=req.owned, collect=[(req.collect[0][0], out)])
    assert job.result() == [out] and out == hashlib.sha256(b"into").digest()


def test_an_error_status_is_returned_not_raised_and_nothing_is_collected() -> None:
    t = model_transport()
    d = Driver(t)
    req = sha_job(d, b"fails")
    t.model.force_status(status.ccb(status.CHA_MD, status.ERR_HARDWARE, 2))
    job = d.submit(req.words, owned=req.owned, collect=req.collect)
    word = job.wait()
    assert word == 0x2000024B and job.outputs == []
    with pytest.raises(CaamError) as err:
        check(word)
    assert err.value.status == word and "MD: internal hardware failure (word 2)" in str(err.value)
    with pytest.raises(CaamError):
        job.result()
    assert d.figures["errors"] == {"0x2000024b": 1} and d.figures["dma_in_use"] == 0


def test_descriptor_words_are_checked() -> None:
    d = Driver(model_transport())
    p = d.alloc(8)
    with pytest.raises(ValueError, match="1 to 64 words"):
        d.submit([], owned=[p])
    with pytest.raises(ValueError, match="descriptor word 1 must be a 32-bit"):
        d.submit([0xB0800002, 1 << 32])
    with pytest.raises(ValueError, match="1 to 64 words"):
        d.run([0xB0800001] * 65)
    assert d.figures["jobs"] == 0 and d.figures["dma_in_use"] == 0  # the owned region went back


def test_completions_out_of_order_are_matched_by_address() -> None:
    t = Reordering(model_transport())
    d = Driver(t, depth=8)
    t.outring, t.entry = d._ring.outring, d.pointer_size + 4
    t.model.stall()
    msgs = [os.urandom(10 + i) for i in range(5)]
    reqs = [sha_job(d, m) for m in msgs]
    jobs = d.submit_many(reqs)
    t.model.unstall()  # all five complete; the driver reads them back last first
    assert [bytes(j.result()[0]) for j in jobs] == [hashlib.sha256(m).digest() for m in msgs]
    assert d.figures["in_flight"] == 0


def test_a_completion_nobody_submitted_is_counted_and_ignored() -> None:
    t = model_transport()
    d = Driver(t, depth=4)
    ring = d._ring
    stray = t.alloc(16)
    t.write(stray, d.pack([0xB0800001]))
    t.write(ring.inring, struct.pack(">I", stray))  # an entry the driver never wrote
    t.write32(RING0 + regs.IRJAR, 1)
    ring.head = 1
    assert run_sha(d, b"mine") == hashlib.sha256(b"mine").digest()
    assert d._counts["stray_completions"] == 1


# ---------------------------------------------------------------------- many in flight


def test_many_threads_share_the_ring_and_every_answer_is_right() -> None:
    t = Later(model_transport())
    d = Driver(t, depth=4)
    n_threads, per_thread = 8, 25
    results: dict[int, list[tuple[bytes, bytes]]] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            out = []
            for i in range(per_thread):
                msg = os.urandom(k + i + 1)
                out.append((msg, run_sha(d, msg)))
            results[k] = out
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert not errors and len(results) == n_threads
    for out in results.values():
        assert all(hashlib.sha256(m).digest() == h for m, h in out)
    f = d.figures
    assert f["jobs"] == n_threads * per_thread and f["errors"] == {}
    assert 1 < f["max_in_flight"] <= 4 and f["in_flight"] == 0
    assert f["bytes_out"] == 32 * n_threads * per_thread
    assert f["bytes_in"] == sum(len(m) for out in results.values() for m, _ in out)
    assert f["dma_in_use"] == 0 and f["ring_resets"] == 0


def test_a_batch_goes_on_the_ring_with_one_irjar_write_per_free_stretch() -> None:
    t = Later(model_transport())
    d = Driver(t, depth=16)
    msgs = [os.urandom(i) for i in range(40)]
    jobs = d.submit_many([sha_job(d, m) for m in msgs])
    assert [bytes(j.result()[0]) for j in jobs] == [hashlib.sha256(m).digest() for m in msgs]
    adds = [v for k, off, v in t.log if k == "w" and off == RING0 + regs.IRJAR]
    assert adds[0] == 16 and sum(adds) == 40 and len(adds) < 40
    assert d.figures["max_in_flight"] == 16


def test_run_many_gives_the_status_words_in_order() -> None:
    t = model_transport()
    d = Driver(t, depth=8)
    good = sha_job(d, b"good")
    words = d.run_many([good, [0xB0800000], RNG_INSTANTIATE])  # header length 0: DECO 0x13
    assert words[0] == 0 and words[1] == status.deco(status.DECO_HDRLEN)
    assert words[2] & 0xFF == 0
    assert d.figures["jobs"] == 3 and d.figures["dma_in_use"] == 0


# ---------------------------------------------------------------------- full, stalled, errors


def test_a_full_ring_is_refused_at_once_with_ring_full() -> None:
    t = model_transport()
    d = Driver(t)
    t.model.make_ring_full()
    req = sha_job(d, b"no room")
    with pytest.raises(RingFull, match="full"):
        d.submit(req.words, owned=req.owned, collect=req.collect)
    assert t.model.counters.jobs == 0 and t.model.counters.ring_errors == 0
    f = d.figures
    assert f["ring_full"] == 1 and f["jobs"] == 0 and f["dma_in_use"] == 0
    jobs = d.submit_many([sha_job(d, b"a"), sha_job(d, b"b")])
    assert all(isinstance(j.error, RingFull) for j in jobs)
    with pytest.raises(RingFull):
        jobs[0].wait()
    t.model.make_ring_full(False)
    assert run_sha(d, b"room") == hashlib.sha256(b"room").digest()


def test_a_ring_full_of_our_own_stalled_jobs_waits_then_gives_up() -> None:
    t = model_transport()
    d = Driver(t, depth=2, timeout=0.05)
    t.model.stall()
    held = [d.submit(sha_job(d, b"%d" % i).words) for i in range(2)]
    with pytest.raises(RingFull, match="stayed full"):
        d.submit(sha_job(d, b"third").words)
    t.model.unstall()
    assert [j.wait() for j in held] == [0, 0]
    assert run_sha(d, b"after") == hashlib.sha256(b"after").digest()


def test_a_submit_waits_for_room_that_other_jobs_free() -> None:
    t = Later(model_transport(), latency=0.002)
    d = Driver(t, depth=1)
    msgs = [b"one", b"two", b"three"]
    jobs = [go(d, sha_job(d, m)) for m in msgs]
    assert [j.wait() for j in jobs] == [0, 0, 0]
    assert d.figures["max_in_flight"] == 1 and d.figures["ring_full"] == 0


def test_a_stalled_ring_times_out_is_reset_and_serves_again() -> None:
    t = model_transport()
    d = Driver(t, depth=4, timeout=5.0)
    t.model.stall()
    late, other = (go(d, sha_job(d, m)) for m in (b"late", b"other"))
    with pytest.raises(RingTimeout) as err:
        late.wait(timeout=0.05)
    assert err.value.status == FLUSHED and "not back after 0.05 s" in str(err.value)
    assert "the ring was reset" in str(err.value)
    with pytest.raises(CaamError) as other_err:
        other.wait()
    assert not isinstance(other_err.value, RingTimeout) and other_err.value.status == FLUSHED
    f = d.figures
    assert f["timeouts"] == 1 and f["ring_resets"] == 1 and f["errors"] == {f"0x{FLUSHED:08x}": 2}
    assert f["dma_in_use"] == 0 and f["in_flight"] == 0
    t.model.unstall()
    assert run_sha(d, b"again") == hashlib.sha256(b"again").digest()
    assert t.model.counters.flushed == 2


def test_a_ring_error_resets_the_ring_and_fails_the_jobs_in_flight() -> None:
    t = model_transport()
    d = Driver(t, depth=4)
    t.model.stall()
    jobs = [go(d, sha_job(d, b"%d" % i)) for i in range(3)]
    t.write32(RING0 + regs.IRJAR, 100)  # more jobs than slots: ring error ADD_OFL (9)
    assert t.read32(RING0 + regs.JRINTR) & regs.JRINTR_ERR
    for job in jobs:
        with pytest.raises(CaamError, match=r"type 9, more jobs added than slots \(JRINTR 0x0+902"):
            job.wait()
    f = d.figures
    assert f["ring_errors"] == 1 and f["ring_resets"] == 1 and f["errors"] == {"0x4000001a": 3}
    assert f["dma_in_use"] == 0
    assert not t.read32(RING0 + regs.JRINTR) & regs.JRINTR_ERR
    t.model.unstall()
    assert run_sha(d, b"recovered") == hashlib.sha256(b"recovered").digest()


def test_a_job_that_finished_before_the_error_keeps_its_answer() -> None:
    t = Later(model_transport(), latency=None)
    d = Driver(t, depth=4)
    done = go(d, sha_job(d, b"done"))
    t.release()  # it reaches the block and completes; the driver has not looked yet
    t.model.stall()
    caught = go(d, sha_job(d, b"caught"))
    t.release()
    t.inner.write32(RING0 + regs.IRJAR, 100)  # ring error
    with pytest.raises(CaamError):
        caught.wait()
    assert bytes(done.result()[0]) == hashlib.sha256(b"done").digest()


# ---------------------------------------------------------------------- shared descriptors


def _shared_hash(d: Driver) -> list[int]:
    """A shared descriptor: SHA-256 over the input sequence into the output sequence."""
    b = d.builder().header(kind="shared", share="serial")
    b.operation(2, "SHA256", encrypt=True)
    b.math("ADD", "SEQINLEN", "MATH0", "VARSEQINLEN")
    b.fifo_load(2, "MSG", seq=True, vlf=True, last2=True)
    b.store(2, "context", length=32, seq=True)
    return b.words()


def shared_sha(d: Driver, key: object, msg: bytes) -> Job:
    words = _shared_hash(d)
    phys = d.shared(key, lambda: words)
    p_in, p_out = d.put(msg), d.alloc(32)
    b = d.builder().header(shared_pointer=phys, shared_length=len(words), reverse=True)
    b.seq_in_ptr(pointer=p_in, length=len(msg), flags=("EXT",))
    b.seq_out_ptr(pointer=p_out, length=32, flags=("EXT",))
    return d.submit(b.words(), owned=(p_in, p_out), collect=((p_out, 32),))


def test_shared_descriptors_are_built_once_per_key(drv: Driver) -> None:
    built = []

    def build() -> list[int]:
        built.append(1)
        return _shared_hash(drv)

    a = drv.shared("k1", build)
    assert drv.shared("k1", build) == a and len(built) == 1
    assert drv.transport.read(a, 4) == drv.pack(_shared_hash(drv)[:1])
    for msg in (b"one", b"two"):
        assert bytes(shared_sha(drv, "k1", msg).result()[0]) == hashlib.sha256(msg).digest()
    f = drv.figures
    assert f["shared_cached"] == 1 and f["shared_builds"] == 1 and f["shared_hits"] == 3


def test_the_cache_is_bounded_and_an_evicted_descriptor_outlives_its_jobs() -> None:
    t = Later(model_transport(), latency=None)
    d = Driver(t, shared_capacity=2)
    memory = t.model.memory
    jobs = {key: shared_sha(d, key, key.encode()) for key in ("old", "b", "c")}
    old = jobs["old"].shared.phys  # evicted by "c" while its job waits on the ring
    assert "old" not in d._shared.by_key and memory.valid(old, 4)
    t.release()
    for key, job in jobs.items():
        assert bytes(job.result()[0]) == hashlib.sha256(key.encode()).digest()
    assert not memory.valid(old, 4)  # freed once its job was reaped
    b = d._shared.by_key["b"].phys
    t.latency = 0.0
    shared_sha(d, "d", b"d").wait()  # evicts "b", idle: freed at once
    assert not memory.valid(b, 4)
    assert d.figures["shared_cached"] == 2
    assert d.figures["dma_in_use"] == 2 * 4 * len(_shared_hash(d))


def test_an_evicted_descriptor_a_caller_still_holds_is_kept_until_its_job_runs() -> None:
    d = Driver(model_transport(), shared_capacity=1)
    memory = d.transport.model.memory
    words = _shared_hash(d)
    held = d.shared("held", lambda: words)  # got its address, has not submitted yet
    d.shared("other", lambda: words)
    assert memory.valid(held, 4)
    p_in, p_out = d.put(b"late"), d.alloc(32)
    b = d.builder().header(shared_pointer=held, shared_length=len(words), reverse=True)
    b.seq_in_ptr(pointer=p_in, length=4, flags=("EXT",))
    b.seq_out_ptr(pointer=p_out, length=32, flags=("EXT",))
    job = d.submit(b.words(), owned=(p_in, p_out), collect=((p_out, 32),))
    assert bytes(job.result()[0]) == hashlib.sha256(b"late").digest()
    assert not memory.valid(held, 4)


def test_a_descriptor_a_caller_never_used_is_freed_after_the_grace() -> None:
    d = Driver(model_transport(), shared_capacity=1)
    now = [100.0]
    d._shared.clock = lambda: now[0]
    words = _shared_hash(d)
    forgotten = d.shared("forgotten", lambda: words)  # the caller failed before submitting
    d.shared("next", lambda: words)
    assert d.transport.model.memory.valid(forgotten, 4)
    now[0] += d._shared.grace + 1
    d.shared("later", lambda: words)  # a miss sweeps the retired entries
    assert not d.transport.model.memory.valid(forgotten, 4)
    assert d.figures["dma_in_use"] == 4 * len(words)  # "next" ran out of grace too


def test_threads_asking_for_one_key_get_one_descriptor() -> None:
    d = Driver(model_transport())
    got: list[int] = []
    barrier = threading.Barrier(6)

    def ask() -> None:
        barrier.wait()
        got.append(d.shared("same", lambda: _shared_hash(d)))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(set(got)) == 1 and d.figures["shared_cached"] == 1
    assert d.figures["dma_in_use"] == 4 * len(_shared_hash(d))


# ---------------------------------------------------------------------- RNG4


def test_ensure_rng_instantiates_state_handle_0_once(drv: Driver) -> None:
    assert drv.rdsta == 0
    drv.ensure_rng()
    assert drv.rdsta & regs.RDSTA_IF0 and drv.rdsta & regs.RDSTA_SKVN
    drv.ensure_rng()
    assert drv.figures["rng_instantiations"] == 1 and drv.figures["jobs"] == 1
    p = drv.alloc(32)
    b = drv.builder().operation(1, "RNG", aai="SH0", state="update")
    b.fifo_store(0, "RNGSTORE", pointer=p, length=32)
    job = drv.submit(b.words(), owned=(p,), collect=((p, 32),))
    assert job.wait() == 0 and job.outputs[0] != bytes(32)


def test_a_failed_instantiation_is_retried_with_a_longer_entropy_sample() -> None:
    t = Wrapped(model_transport())
    d = Driver(t)
    t.model.fail_rng_instantiation()
    d.ensure_rng()
    assert d.rdsta & regs.RDSTA_IF0
    sdctl = [v for k, off, v in t.log if k == "w" and off == regs.RTSDCTL]
    assert sdctl == [RNG_ENTROPY_DELAYS[0] << 16 | 512]
    assert t.model.read32(regs.RTMCTL) & regs.RTMCTL_PRGM == 0  # back out of program mode
    f = d.figures
    assert f["rng_instantiations"] == 1 and f["jobs"] == 2
    assert f["errors"] == {f"0x{status.ccb(status.CHA_RNG, status.ERR_RNG_INSTANTIATE, 1):08x}": 1}


def test_instantiation_that_never_works_raises() -> None:
    class Failing(Wrapped):
        def write32(self, offset: int, value: int) -> None:
            if ring_reg(offset) == regs.IRJAR:
                self.model.fail_rng_instantiation()
            super().write32(offset, value)

    d = Driver(Failing(model_transport()))
    with pytest.raises(CaamError, match="not instantiated after 4 attempts") as err:
        d.ensure_rng()
    assert err.value.status == status.ccb(status.CHA_RNG, status.ERR_RNG_INSTANTIATE, 1)
    assert d.figures["rng_instantiations"] == 0


def test_with_the_secure_keys_already_made_the_instantiation_skips_them() -> None:
    t = Wrapped(model_transport())
    d = Driver(t)
    d.ensure_rng()
    assert d.run([0xB0800002, 0x8250000C]) == 0  # uninstantiate SH0; the keys stay
    assert d.rdsta == regs.RDSTA_SKVN
    d.ensure_rng()
    assert d.rdsta == regs.RDSTA_SKVN | regs.RDSTA_IF0
    assert RNG_INSTANTIATE_NO_SK[1] == RNG_INSTANTIATE[1]
    assert d.figures["rng_instantiations"] == 2 and d.figures["errors"] == {}


# ---------------------------------------------------------------------- figures and memory


def test_figures_count_exactly() -> None:
    t = model_transport()
    d = Driver(t, depth=8)
    msgs = [b"a" * 3, b"b" * 100]
    reqs = [sha_job(d, m) for m in msgs]
    d.run_many(reqs)
    bad = d.put(b"xyz")
    t.model.force_status(status.deco(status.DECO_JOBFAIL))
    assert d.run([0xB0800002, 0x8443000D], owned=[bad]) == 0x4000001B
    f = d.figures
    words = sum(len(r.words) for r in reqs) + 2
    assert f == {
        "jobs": 3,
        "words": words,
        "bytes_in": 103 + 3,
        "bytes_out": 64,
        "copy_in_bytes": 103 + 3,
        "copy_out_bytes": 64,
        "wipe_bytes": 103 + 3 + 64,  # every region the jobs used: inputs and both digests
        "zero_copy_bytes": 0,
        "bounce_bytes": 0,
        "errors": {"0x4000001b": 1},
        "rng_instantiations": 0,
        "in_flight": 0,
        "max_in_flight": 2,
        "ring_full": 0,
        "ring_errors": 0,
        "ring_resets": 0,
        "timeouts": 0,
        "shared_cached": 0,
        "shared_builds": 0,
        "shared_hits": 0,
        "dma_in_use": 0,
        "complete": "poll",
        "interrupts": 0,
        "device_lost": 0,
    }


def test_dma_memory_is_returned_when_reaped_and_at_close() -> None:
    t = Counting(model_transport())
    d = Driver(t)
    assert len(t.live) == 3  # input ring, output ring, descriptor slots
    for i in range(20):
        run_sha(d, os.urandom(i * 7))
    shared_sha(d, "k", b"msg").wait()
    assert len(t.live) == 4  # + the cached shared descriptor
    kept = d.put(b"the caller forgot this one")
    assert d.figures["dma_in_use"] == 4 * len(_shared_hash(d)) + 26
    slots = d._ring.slots
    d.close()
    assert t.live == set()
    assert not t.model.memory.valid(kept, 1) and not t.model.memory.valid(slots, 1)
    d.close()  # twice is harmless
    with pytest.raises(CaamUnavailable, match="closed"):
        d.run(RNG_INSTANTIATE)


def test_close_fails_jobs_still_in_flight_and_frees_their_memory() -> None:
    t = Counting(model_transport())
    d = Driver(t)
    t.model.stall()
    job = go(d, sha_job(d, b"pending"))
    d.close()
    with pytest.raises(CaamError, match="driver closed"):
        job.wait()
    assert t.live == set()


def test_freeing_memory_that_is_not_the_drivers_is_an_error() -> None:
    d = Driver(model_transport())
    p = d.alloc(10)
    d.free(p)
    with pytest.raises(ValueError, match="not DMA memory this driver allocated"):
        d.free(p)


def test_separate_descriptors_fault_past_their_end_and_are_freed() -> None:
    t = Counting(model_transport())
    d = Driver(t, separate_descriptors=True)
    assert d.run([0xB0800003, 0xA2800000]) == status.deco(status.DECO_DMA)
    slotted = Driver(model_transport())  # a slot of the pool: word 2 reads as whatever is there
    assert slotted.run([0xB0800003, 0xA2800000]) != status.deco(status.DECO_DMA)
    assert run_sha(d, b"own region") == hashlib.sha256(b"own region").digest()
    assert len(t.live) == 3 and d.figures["dma_in_use"] == 0


def test_a_bad_request_in_a_batch_puts_nothing_on_the_ring() -> None:
    d = Driver(model_transport())
    reqs = [sha_job(d, b"a"), Request([0xB0800002, -1]), sha_job(d, b"b")]
    with pytest.raises(ValueError, match="descriptor word 1"):
        d.submit_many(reqs)
    assert d.figures["jobs"] == 0 and d.figures["dma_in_use"] == 0
