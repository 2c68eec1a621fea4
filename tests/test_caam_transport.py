"""The Transport protocol, ModelTransport, and the DMA allocator's free and reuse."""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cryptoffload.caam import regs
from cryptoffload.caam.jr.transport import ModelTransport, Transport
from cryptoffload.caam.model.core import CaamModel, SecAbsent
from cryptoffload.caam.model.memory import GUARD, Arena, DmaError, DmaMemory

# ModelTransport ----------------------------------------------------------------------------


def test_model_transport_names_the_part_and_reads_its_registers():
    t = ModelTransport.for_part("t2080", seed=b"transport")
    assert isinstance(t, Transport)
    assert t.name == "model:t2080"
    assert t.svr == t.model.svr and regs.sec_present(t.svr)
    assert t.bounce_bytes == 0
    assert regs.era(t.read32(regs.CCBVID)) == 6
    ring = regs.jr_base(0)
    t.write32(ring + regs.IRSR, 16)
    assert t.read32(ring + regs.IRSR) == 16


def test_model_transport_wraps_a_given_model():
    model = CaamModel("imx7d")
    t = ModelTransport(model)
    assert t.model is model and t.name == "model:imx7d"
    phys = t.alloc(32)
    assert model.memory.valid(phys, 32)


def test_a_part_without_the_sec_shows_its_svr_and_faults_on_registers():
    t = ModelTransport.for_part("t2080-nosec")
    assert not regs.sec_present(t.svr)
    with pytest.raises(SecAbsent):
        t.read32(regs.CCBVID)


def test_model_transport_memory_round_trip():
    with ModelTransport.for_part("t1040") as t:
        phys = t.alloc(100)
        assert phys % 64 == 0
        assert t.read(phys, 100) == bytes(100)  # the model zeroes new memory
        t.write(phys, b"abc")
        t.write(phys + 3, bytearray(b"de"))
        t.write(phys + 5, memoryview(b"\x00\x00fg").cast("I"))  # any buffer, counted in bytes
        assert t.read(phys, 9) == b"abcde\x00\x00fg"
        out = bytearray(4)
        t.read_into(phys + 1, out)
        assert out == b"bcde"
        view = memoryview(bytearray(8))
        t.read_into(phys, view[2:5])
        assert view.tobytes() == b"\x00\x00abc\x00\x00\x00"
        assert t.bounce_bytes == 0
        t.free(phys)
        with pytest.raises(DmaError):
            t.read(phys, 1)
        with pytest.raises(ValueError, match="freed twice"):
            t.free(phys)


def test_alloc_honours_alignments_above_the_granule():
    t = ModelTransport.for_part("t2080")
    for _ in range(3):
        phys = t.alloc(100, 4096)
        assert phys % 4096 == 0
        t.free(phys)


# DmaMemory: free and reuse -----------------------------------------------------------------


def test_freed_space_is_reused_and_zeroed():
    mem = DmaMemory(quarantine=0)
    a = mem.alloc(200)
    mem.write(a, b"\xff" * 200)
    mem.free(a)
    b = mem.alloc(200)
    assert b == a
    assert mem.read(b, 200) == bytes(200)


def test_freed_memory_waits_in_quarantine_so_stale_accesses_fault():
    mem = DmaMemory(quarantine=3)
    first = mem.alloc(100)
    mem.free(first)
    seen = set()
    for _ in range(3):  # the next three regions of that size land elsewhere
        addr = mem.alloc(100)
        seen.add(addr)
        with pytest.raises(DmaError):
            mem.read(first, 1)
        mem.free(addr)
    assert first not in seen
    assert mem.alloc(100) == first  # released after three more frees


def test_quarantine_gives_way_before_memory_runs_out():
    mem = DmaMemory(0x1000, 0x2000, quarantine=64)
    for _ in range(3):
        mem.free(mem.alloc(0x800))
    assert mem.alloc(0xF00) == 0x1000


def test_guard_gap_and_bounds():
    mem = DmaMemory()
    a = mem.alloc(100)
    b = mem.alloc(100)
    assert b >= a + 100 + GUARD
    assert mem.valid(a, 100) and mem.valid(a + 99, 1) and mem.valid(a + 100, 0)
    for addr, n in ((a + 100, 1), (a + 99, 2), (a - 1, 1), (a, -1), (b - GUARD, GUARD)):
        assert not mem.valid(addr, n)
    with pytest.raises(DmaError, match="outside allocated memory"):
        mem.write(a + 98, b"xyz")


def test_a_million_jobs_do_not_exhaust_a_small_window():
    mem = DmaMemory(0x1000_0000, 0x1000_0000 + 64 * 1024, quarantine=4)
    ring = mem.alloc(4096)
    for i in range(20_000):
        desc, data = mem.alloc(64), mem.alloc(1000 + i % 3000)
        mem.free(data)
        mem.free(desc)
    assert len(mem.arena) == 1 + 4 and mem.valid(ring, 4096)  # the ring, and 4 in quarantine


def test_space_freed_in_one_size_serves_another():
    arena = Arena(0x1000, 0x1000 + 16 * 1024)
    small = [arena.alloc(48) for _ in range(256)]  # 64-byte slots fill the range
    with pytest.raises(MemoryError, match="exhausted"):
        arena.alloc(48)
    for addr in small:
        arena.free(addr)
    big = arena.alloc(16 * 1024 - GUARD)  # needs every small slot merged back
    assert big == 0x1000
    arena.free(big)
    assert arena.holes() == [(0x1000, 0x1000 + 16 * 1024)]


def test_bad_requests_are_refused():
    mem = DmaMemory()
    for size, align in ((0, 16), (-5, 16), (16, 3), (16, 0)):
        with pytest.raises(ValueError, match="positive size and a power-of-two alignment"):
            mem.alloc(size, align)
    with pytest.raises(ValueError, match="no DMA region starts there"):
        mem.free(0x1234)
    a = mem.alloc(64)
    with pytest.raises(ValueError):
        mem.free(a + 16)  # inside a region, not its start
    with pytest.raises(MemoryError, match=r"do not fit.*free regions no longer in use"):
        DmaMemory(0x1000, 0x2000).alloc(0x2000)


def test_threads_share_one_memory():
    mem = DmaMemory(0x1000_0000, 0x1000_0000 + 1024 * 1024)
    errors: list[BaseException] = []

    def work(tag: int) -> None:
        try:
            for i in range(3000):
                size = 1 + (i * 37 + tag) % 700
                addr = mem.alloc(size)
                payload = bytes([tag]) * size
                mem.write(addr, payload)
                assert mem.read(addr, size) == payload
                mem.free(addr)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(mem.arena) == 64  # in quarantine, the rest back in the arena


# The property: random alloc/free sequences ------------------------------------------------

WINDOW = (0x4000_0000, 0x4000_0000 + 32 * 1024)

_ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("alloc"),
            st.integers(1, 5000),
            st.sampled_from([1, 4, 16, 64, 256, 4096]),
        ),
        st.tuples(st.just("free"), st.integers(0, 1 << 16), st.just(0)),
    ),
    max_size=80,
)


def _check(mem: DmaMemory, live: dict[int, tuple[int, int]], freed: set[int]) -> None:
    spans = sorted((addr, addr + size) for addr, (size, _) in live.items())
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end + GUARD  # no overlap, and the guard gap between
    for addr, (size, tag) in live.items():
        assert WINDOW[0] <= addr and addr + size <= WINDOW[1]
        assert mem.read(addr, size) == bytes([tag]) * size
        assert not mem.valid(addr + size, 1) and not mem.valid(addr - 1, 1)
        assert not mem.valid(addr, size + 1)
    for addr in freed - live.keys():
        if not any(a <= addr < a + s for a, (s, _) in live.items()):
            with pytest.raises(DmaError):
                mem.read(addr, 1)


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_random_alloc_free_sequences_keep_regions_apart(ops):
    mem = DmaMemory(*WINDOW, quarantine=2)
    live: dict[int, tuple[int, int]] = {}
    freed: set[int] = set()
    for n, (op, a, b) in enumerate(ops):
        if op == "alloc":
            try:
                addr = mem.alloc(a, b)
            except MemoryError:
                continue
            assert addr % max(b, 64) == 0 and addr not in live
            tag = n % 255 + 1
            mem.write(addr, bytes([tag]) * a)
            live[addr] = (a, tag)
        elif live:
            addr = sorted(live)[a % len(live)]
            mem.free(addr)
            del live[addr]
            freed.add(addr)
        _check(mem, live, freed)
    for addr in list(live):
        mem.free(addr)
    mem.release_quarantine()
    assert len(mem.arena) == 0
    assert mem.arena.holes() == [WINDOW]  # everything merged back into one hole
