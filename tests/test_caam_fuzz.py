"""Random and mutated descriptors through the CAAM model's job ring: no exception, a status, no
stray writes."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cryptoffload.caam import regs
from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.model import CaamModel, core

BUFFERS = 4
BUFFER_BYTES = 64
#: Status sources a job may report (status.py): none, CCB, jump halts, DECO, job ring.
SOURCES = {0x0, 0x2, 0x3, 0x4, 0x6, 0x7}
#: Lengths worth trying: empty, odd, around the buffers, the 16-bit limit, EXT lengths to 4 GiB.
LENGTHS = st.one_of(
    st.sampled_from([0xFFFFFFFF, 0x10000, 0xFFFF, 0x7FFFFFFF, 0, 1, 15, 16, 17, 63, 64, 65]),
    st.integers(0, BUFFER_BYTES + 8),
)
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Rig:
    """A fresh model with job ring 0 set up for one job, data buffers and a record of every
    region allocated, so that a test can tell what the job changed."""

    def __init__(self, part: str, long_pointers: bool, rng: bool, fill: bytes) -> None:
        self.model = m = CaamModel(part, seed=b"fuzz")
        if long_pointers:
            m.write32(regs.MCFGR, regs.MCFGR_LONG_PTR)
        self.long = m.long_pointers
        self.order = m.part.byteorder
        self.ptr = 8 if self.long else 4
        self.regions: list[tuple[int, int]] = []
        self.inring = self.alloc(self.ptr)
        self.outring = self.alloc(self.ptr + 4)
        self.base = regs.jr_base(0)
        for reg, value in (
            (regs.IRBAR_LO, self.inring),
            (regs.ORBAR_LO, self.outring),
            (regs.IRSR, 1),
            (regs.ORSR, 1),
        ):
            m.write32(self.base + reg, value)
        if rng:
            assert m.rng.instantiate(0, index=0) == 0
        self.buffers = []
        for i in range(BUFFERS):
            addr = self.alloc(BUFFER_BYTES)
            m.memory.write(addr, (fill * BUFFER_BYTES)[i : i + BUFFER_BYTES].ljust(BUFFER_BYTES))
            self.buffers.append(addr)

    def alloc(self, size: int) -> int:
        addr = self.model.memory.alloc(size)
        self.regions.append((addr, size))
        return addr

    def pointer(self, choice: int, offset: int) -> int:
        """A buffer address (plus ``offset``) or, past the buffers, an address nothing backs."""
        if choice < BUFFERS:
            return self.buffers[choice] + offset
        return [0, 0xFFFFFFF0, self.buffers[-1] + BUFFER_BYTES + 4, 0x7FFFFFFC][choice % 4]

    def snapshot(self) -> list[bytes]:
        return [self.model.memory.read(addr, n) for addr, n in self.regions]

    def run(self, words: list[int]) -> None:
        """Run ``words`` as one job; check the ring entry and that only the job's outputs and
        its output ring entry changed."""
        m = self.model
        desc = self.alloc(4 * len(words))
        m.memory.write(desc, b"".join(w.to_bytes(4, self.order) for w in words))
        entry = b"".join(w.to_bytes(4, self.order) for w in _pointer_words(desc, self.long))
        m.memory.write(self.inring, entry)
        before = self.snapshot()
        results: list[Any] = []
        real = core.run_job

        def spy(addr: int, ctx: Any) -> Any:
            results.append(real(addr, ctx))
            return results[-1]

        tracemalloc.start()
        try:
            with mock.patch.object(core, "run_job", spy):
                m.write32(self.base + regs.IRJAR, 1)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # The buffers are 64 bytes: a job that builds megabytes took an EXT length at its word.
        assert peak < 4 << 20, f"the job allocated {peak} bytes"
        assert m.read32(self.base + regs.ORSFR) == 1, "the job did not complete"
        assert not m.read32(self.base + regs.JRINTR) & regs.JRINTR_ERR
        raw = m.memory.read(self.outring, self.ptr + 4)
        got = [int.from_bytes(raw[i : i + 4], self.order) for i in range(0, len(raw), 4)]
        assert got[:-1] == _pointer_words(desc, self.long)
        word = got[-1]
        assert word == results[0].status
        assert word >> 28 in SOURCES, f"status 0x{word:08x}"
        if word >> 28 in (0x2, 0x4):
            assert (word >> 8) & 0xFF < len(words), f"status 0x{word:08x} past the descriptor"
        for a, k in results[0].outputs:
            assert any(b <= a and a + k <= b + BUFFER_BYTES for b in self.buffers), (a, k)
        allowed = [*results[0].outputs, (self.outring, self.ptr + 4)]
        for (addr, n), old, new in zip(self.regions, before, self.snapshot(), strict=True):
            for i in (i for i in range(n) if old[i] != new[i]):
                assert any(a <= addr + i < a + k for a, k in allowed), (
                    f"byte 0x{addr + i:x} changed outside the job's outputs {allowed}"
                )
        m.write32(self.base + regs.ORJRR, 1)


def _pointer_words(addr: int, long: bool) -> list[int]:
    return [addr >> 32, addr & 0xFFFFFFFF] if long else [addr]


RIGS = st.builds(
    Rig,
    part=st.sampled_from(["t2080", "imx7d"]),
    long_pointers=st.booleans(),
    rng=st.booleans(),
    fill=st.binary(min_size=1, max_size=16),
)
POINTERS = st.tuples(
    st.integers(0, BUFFERS + 3), st.integers(0, BUFFER_BYTES // 4).map((4).__mul__)
)


# Random words after a valid header.

OPCODES = sorted(E.COMMANDS)


@st.composite
def random_descriptors(draw: st.DrawFn, rig: Rig) -> list[int]:
    def word() -> int:
        kind = draw(st.integers(0, 3))
        if kind == 0:
            return draw(st.sampled_from(OPCODES)) | draw(st.integers(0, (1 << 27) - 1))
        if kind == 1:
            return rig.pointer(*draw(POINTERS))
        if kind == 2:
            return draw(LENGTHS)
        return draw(st.integers(0, E.WORD_MASK))

    body = [word() for _ in range(draw(st.integers(0, 24)))]
    length = draw(st.one_of(st.just(1 + len(body)), st.integers(1, 64)))
    start = draw(st.one_of(st.just(0), st.integers(0, length)))
    return [0xB0800000 | start << 16 | length, *body]


# Builder-made descriptors with random fields, then a few bits flipped.


def _operand(draw: st.DrawFn, rig: Rig, *, imm_ok: bool = True) -> dict[str, Any]:
    if imm_ok and draw(st.booleans()):
        return {"data": draw(st.binary(max_size=16))}
    return {"pointer": rig.pointer(*draw(POINTERS)), "length": draw(st.integers(0, 80))}


def _names(table: dict[int, str]) -> st.SearchStrategy[str | int]:
    return st.one_of(st.sampled_from(sorted(table.values())), st.integers(0, 0x3F))


@st.composite
def builder_descriptors(draw: st.DrawFn, rig: Rig, most: int = 6, flips: int = 2) -> list[int]:
    b = DescriptorBuilder(long_pointers=rig.long, byteorder=rig.order)
    ptr = rig.pointer

    def key() -> None:
        op = _operand(draw, rig)
        b.key(draw(st.integers(0, 3)), dest=draw(st.integers(0, 3)), **op)

    def load() -> None:
        cls = draw(st.integers(0, 3))
        reg = draw(
            st.one_of(st.sampled_from(sorted(E.LDST_REGS[cls].values())), st.integers(0, 127))
        )
        offset = draw(st.integers(0, 80))
        if draw(st.booleans()):
            b.load(cls, reg, offset=offset, value=draw(st.integers(0, E.WORD_MASK)))
        else:
            b.load(cls, reg, offset=offset, **_operand(draw, rig))

    def store() -> None:
        cls = draw(st.integers(0, 3))
        reg = draw(
            st.one_of(st.sampled_from(sorted(E.LDST_REGS[cls].values())), st.integers(0, 127))
        )
        op = _operand(draw, rig, imm_ok=False)
        code = reg if isinstance(reg, int) else {v: k for k, v in E.LDST_REGS[cls].items()}[reg]
        if code in E.STORE_NO_POINTER_REGS:  # the descriptor-buffer write-backs take no pointer
            op.pop("pointer")
        b.store(cls, reg, offset=draw(st.integers(0, 80)), **op)

    def fifo_load() -> None:
        ftype = draw(_names({**E.FIFOLD_PK_TYPES, **E.FIFOLD_DATA_TYPES}))
        pk = ftype.startswith("PK_") if isinstance(ftype, str) else ftype < 0x10
        op = _operand(draw, rig)
        if "length" in op:
            op["length"] = draw(LENGTHS)
        ext = op.get("length", 0) > 0xFFFF or draw(st.booleans())
        flags = {f: draw(st.booleans()) for f in ("flush1", "last1", "last2")} if not pk else {}
        if isinstance(ftype, int) and ftype >= 0x10:
            ftype &= ~E.FIFOLD_ACTION_MASK
        b.fifo_load(draw(st.integers(0, 3)), ftype, ext=ext, **op, **flags)

    def fifo_store() -> None:
        length = draw(LENGTHS)
        ext = length > 0xFFFF or draw(st.booleans())
        common = st.sampled_from(["MESSAGE_DATA", "RNGSTORE", "PKHA_B", "SKIP"])
        ftype = draw(st.one_of(common, _names(E.FIFOST_TYPES)))
        b.fifo_store(
            draw(st.integers(0, 3)), ftype, length=length, pointer=ptr(*draw(POINTERS)), ext=ext
        )

    def operation() -> None:
        kind = draw(st.integers(0, 2))
        if kind == 0:
            alg = draw(st.sampled_from(sorted(E.ALGORITHMS.values())))
            b.operation(
                draw(st.sampled_from([1, 2])),
                alg,
                aai=draw(st.integers(0, 0x1FF)),
                state=draw(st.integers(0, 3)),
                icv=draw(st.booleans()),
                encrypt=draw(st.booleans()),
            )
        elif kind == 1:
            b.pkha(
                draw(st.integers(0, 0x3F)),
                flags=draw(st.lists(st.sampled_from(sorted(E.PK_FLAGS)))),
            )
        else:
            b.protocol(
                draw(st.sampled_from(sorted(E.PROTOCOLS.values()))),
                protinfo=draw(
                    st.sampled_from([0, 1, 2, 3, 0x800, 0x802, draw(st.integers(0, 0xFFFF))])
                ),
            )

    def jump() -> None:
        jtype = draw(st.sampled_from(["local", "halt", "halt-user", "nonlocal"]))
        b.jump(
            type=jtype,
            cls=draw(st.integers(0, 3)),
            test=draw(st.integers(0, 3)),
            condition=draw(st.integers(0, 0xFF)),
            offset=draw(st.integers(-8, 8)),
            pointer=ptr(*draw(POINTERS)) if jtype == "nonlocal" else None,
        )

    def seq_ptr() -> None:
        flags = draw(st.lists(st.sampled_from(["PRE", "RTO"]), max_size=1))
        length = draw(LENGTHS)
        if length > 0xFFFF or draw(st.booleans()):
            flags.append("EXT")
        pointer = None if {"PRE", "RTO"} & set(flags) else ptr(*draw(POINTERS))
        method = b.seq_in_ptr if draw(st.booleans()) else b.seq_out_ptr
        method(length=length, pointer=pointer, flags=flags)

    makers: list[Callable[[], None]] = [key, load, store, fifo_load, fifo_store, operation, jump]
    makers.append(seq_ptr)
    if most > 2 and draw(st.booleans()):
        pdb = []
        for _ in range(draw(st.integers(1, 12))):
            pdb.append(ptr(*draw(POINTERS)) if draw(st.booleans()) else draw(LENGTHS))
        b.pdb_words(*pdb)
    for _ in range(draw(st.integers(0, most))):
        draw(st.sampled_from(makers))()
    words = b.words()
    for _ in range(draw(st.integers(0, flips))):
        i = draw(st.integers(0, len(words) - 1))
        words[i] ^= 1 << draw(st.integers(0, 31))
    return words


@FUZZ
@given(st.data(), RIGS)
def test_random_words_after_a_header_end_with_a_status(data: st.DataObject, rig: Rig) -> None:
    rig.run(data.draw(random_descriptors(rig)))


@FUZZ
@given(st.data(), RIGS)
def test_mutated_builder_descriptors_end_with_a_status(data: st.DataObject, rig: Rig) -> None:
    rig.run(data.draw(builder_descriptors(rig)))


@settings(FUZZ, max_examples=250)
@given(st.data(), RIGS)
def test_one_or_two_builder_commands_end_with_a_status(data: st.DataObject, rig: Rig) -> None:
    # Short descriptors reach every command with its odd fields (4 GiB EXT lengths, pointers
    # nothing backs) instead of stopping at an earlier error.
    rig.run(data.draw(builder_descriptors(rig, most=2, flips=0)))
