"""The DECO's control and data flow beyond plain job descriptors: shared descriptors, MATH and its
flags, conditional and nonlocal JUMPs, MOVE, DECO registers, sequences and sec4 S/G tables."""

from __future__ import annotations

import hashlib
import os

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st
from linux_descriptors import sg_entry, sg_table

from cryptoffload.caam import status
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.desc.words import to_bytes
from cryptoffload.caam.model.deco import JobContext, JobResult, run_job
from cryptoffload.caam.model.math import FUNCTIONS, compute
from cryptoffload.caam.model.memory import DmaMemory
from cryptoffload.caam.model.parts import PARTS
from cryptoffload.caam.model.rng import Rng4

DECO = status.deco


class Bench:
    """A part's DMA memory and RNG; runs descriptors built with DescriptorBuilder."""

    def __init__(self, part: str = "t2080", long: bool = False) -> None:
        self.part = PARTS[part]
        self.order = self.part.byteorder
        self.long = long
        self.mem = DmaMemory()
        self.rng = Rng4(seed=b"flow")

    def b(self, **header: object) -> DescriptorBuilder:
        d = DescriptorBuilder(long_pointers=self.long, byteorder=self.order)
        return d.header(**header) if header else d  # type: ignore[arg-type]

    def buf(self, data: bytes | int) -> int:
        size = data if isinstance(data, int) else len(data)
        addr = self.mem.alloc(max(size, 1))
        if not isinstance(data, int):
            self.mem.write(addr, data)
        return addr

    def read(self, addr: int, n: int) -> bytes:
        return self.mem.read(addr, n)

    def place(self, words: list[int] | DescriptorBuilder) -> int:
        if isinstance(words, DescriptorBuilder):
            words = words.words()
        return self.buf(to_bytes(words, self.order))

    def run(self, words: list[int] | DescriptorBuilder) -> JobResult:
        ctx = JobContext(self.mem, self.part, self.rng, self.long)
        return run_job(self.place(words), ctx)

    def shared_job(self, shared: DescriptorBuilder, **header: object) -> DescriptorBuilder:
        words = shared.words()
        opts = {"reverse": True, "share": "defer", **header}
        return self.b(shared_pointer=self.place(words), shared_length=len(words), **opts)


@pytest.fixture(params=["t2080", "imx7d"])
def bench(request: pytest.FixtureRequest) -> Bench:
    return Bench(request.param)


def be(value: int, n: int = 8) -> bytes:
    return value.to_bytes(n, "big")


# ---------------------------------------------------------------------- MATH: the arithmetic


def reference(function: str, a: int, b: int, length: int, carry: bool) -> tuple[int, int]:
    """(result, N|Z|C|NV bits) from Python integers, written independently of the model."""
    bits = 8 * length
    a, b = a % 2**bits, b % 2**bits

    def signed(x: int) -> int:
        return x - 2**bits if x >= 2 ** (bits - 1) else x

    c = nv = 0
    if function in ("ADD", "ADDC"):
        extra = int(carry) if function == "ADDC" else 0
        exact = a + b + extra
        c = int(exact >= 2**bits)
        nv = int(not -(2 ** (bits - 1)) <= signed(a) + signed(b) + extra < 2 ** (bits - 1))
    elif function in ("SUB", "SUBB"):
        extra = int(carry) if function == "SUBB" else 0
        exact = a - b - extra
        c = int(exact < 0)
        nv = int(not -(2 ** (bits - 1)) <= signed(a) - signed(b) - extra < 2 ** (bits - 1))
    elif function == "OR":
        exact = a | b
    elif function == "AND":
        exact = a & b
    elif function == "XOR":
        exact = a ^ b
    elif function == "LSHIFT":
        exact = a * 2**b if b < bits else 0
    elif function == "RSHIFT":
        exact = a // 2**b if b < bits else 0
    elif function == "SHLD":  # the two halves: a's low half up, b's high half down
        exact = (a % 2 ** (bits // 2)) * 2 ** (bits // 2) + b // 2 ** (bits // 2)
    elif function == "ZBYT":
        raw = a.to_bytes(length, "big")
        exact = int.from_bytes(bytes(0xFF if x == 0 else 0 for x in raw), "big")
    else:  # BSWAP
        exact = int.from_bytes(a.to_bytes(length, "big")[::-1], "big")
    result = exact % 2**bits
    flags = (result >= 2 ** (bits - 1)) << 3 | (result == 0) << 2 | c << 1 | nv
    return result, flags


OPERANDS = st.one_of(
    st.integers(0, 2**64 - 1),
    st.sampled_from(
        [
            0,
            1,
            2,
            0x7F,
            0x80,
            0xFF,
            0x7FFF,
            0x8000,
            0xFFFF,
            2**31,
            2**32 - 1,
            2**63,
            2**64 - 1,
            3,
            8,
            16,
            31,
            32,
            63,
            64,
        ]
    ),
)


@settings(max_examples=600)
@given(st.sampled_from(FUNCTIONS), OPERANDS, OPERANDS, st.sampled_from([1, 2, 4, 8]), st.booleans())
def test_compute_matches_python_integers(function, a, b, length, carry) -> None:
    result, flags = compute(function, a, b, length, carry)
    assert (result, flags.bits()) == reference(function, a, b, length, carry)


def math_job(
    bench: Bench, function: str, a: int, b: int, length: int, carry: bool, nfu: bool
) -> tuple[DescriptorBuilder, int, int]:
    """a and b into MATH0 / MATH1, the carry set, MATH2 = a <function> b, then each flag turned
    into a bit of MATH3 by a JUMP over an OR (INVALL: taken when the flag is clear)."""
    p_result, p_flags = bench.buf(8), bench.buf(8)
    d = bench.b()
    d.load(3, "math0", data=be(a)).load(3, "math1", data=be(b))
    if carry:
        d.math("SUB", "ZERO", "ONE", "NONE", length)  # 0 - 1 borrows: C set
    else:
        d.math("ADD", "ZERO", "ZERO", "NONE", length)  # Z set, C clear
    d.math(function, "MATH0", "MATH1", "MATH2", length, nfu=nfu)
    for bit, cond in ((8, "MATH_N"), (4, "MATH_Z"), (2, "MATH_C"), (1, "MATH_NV")):
        d.jump(test="invall", condition=[cond], offset=3)
        d.math("OR", "MATH3", "IMM", "MATH3", 8, imm=bit, ifb=True, nfu=True)
    d.store(3, "math2", length=8, pointer=p_result).store(3, "math3", length=8, pointer=p_flags)
    return d, p_result, p_flags


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["t2080", "imx7d"]),
    st.sampled_from(FUNCTIONS),
    OPERANDS,
    OPERANDS,
    st.sampled_from([1, 2, 4, 8]),
    st.booleans(),
    st.booleans(),
)
def test_math_command_and_its_flags_through_the_deco(part, function, a, b, length, carry, nfu):
    bench = Bench(part)
    d, p_result, p_flags = math_job(bench, function, a, b, length, carry, nfu)
    assert bench.run(d).status == 0
    result, flags = reference(function, a, b, length, carry)
    if nfu:  # the flags of the carry set-up stay
        flags = 0b0010 if carry else 0b0100
        flags |= 0b1000 if carry else 0  # 0 - 1 is all ones: N
    assert int.from_bytes(bench.read(p_result, 8), "big") == result  # zero-extended
    assert int.from_bytes(bench.read(p_flags, 8), "big") == flags


def test_eight_byte_immediates_in_each_byte_order(bench: Bench) -> None:
    p = bench.buf(16)
    d = bench.b().math("ADD", "IMM", "ZERO", "MATH0", 8, imm=0x0123456789ABCDEF)
    d.math("ADD", "ZERO", "IMM", "MATH1", 8, imm=0xF7FFFFFF, ifb=True)  # zero-extended
    d.store(3, "math0", length=16, pointer=p)  # MATH0 and MATH1, one after the other
    assert bench.run(d).status == 0
    assert bench.read(p, 16) == be(0x0123456789ABCDEF) + be(0xF7FFFFFF)


@pytest.mark.parametrize(
    "word", [0xA8000003, 0xA8C00004, 0xA800A004, 0xA80D0004, 0xA8000C04, 0xA8000504]
)
def test_invalid_math_is_deco_0x0e(bench: Bench, word: int) -> None:
    # length 3; function 0xC; src1 INFIFO (not modelled); src0 0xD, dest 0xC, dest 5 (none such)
    assert bench.run(bench.b().raw(word)).status == DECO(0x0E, 1)


def test_math_registers_read_zero_at_the_start_of_every_job(bench: Bench) -> None:
    p = bench.buf(8)
    first = bench.b().math("ADD", "IMM", "ZERO", "MATH0", 4, imm=7)
    first.store(3, "math0", length=8, pointer=p)
    assert bench.run(first).status == 0 and bench.read(p, 8) == be(7)
    second = bench.b().store(3, "math0", length=8, pointer=p)
    assert bench.run(second).status == 0 and bench.read(p, 8) == bytes(8)


# ---------------------------------------------------------------------- JUMP


@pytest.mark.parametrize(
    ("jsl", "test", "conditions", "taken"),
    [
        (True, "all", ["CALM", "NIP", "NIFP", "NOP", "NCP"], True),  # nothing is pending
        (True, "all", ["SHRD"], False),  # the model never shares
        (True, "invall", ["SHRD", "SELF", "JQP"], True),
        (True, "any", ["SHRD", "CALM"], True),
        (True, "invany", ["SHRD", "CALM"], True),
        (True, "invany", ["CALM"], False),
        (False, "all", [], True),  # unconditional
        (False, "invall", ["MATH_Z"], False),  # the set-up leaves Z set
        (False, "all", ["MATH_Z", "MATH_C"], False),
        (False, "any", ["MATH_Z", "MATH_C"], True),
        (False, "invany", ["MATH_Z", "MATH_C"], True),
        (False, "any", ["PK_0", "PK_PRIME"], False),  # PKHA conditions read false
    ],
)
def test_jump_tests_and_condition_sets(jsl, test, conditions, taken) -> None:
    bench = Bench()
    d = bench.b().math("SUB", "ZERO", "ZERO", "NONE", 4)  # Z set, C clear
    d.jump(jsl=jsl, test=test, condition=conditions, offset=2)
    d.jump(type="halt-user", offset=0x11)  # reached when not taken
    d.jump(type="halt-user", offset=0x22)
    want = 0x30000422 if taken else 0x30000311
    assert bench.run(d).status == want


def test_a_counting_loop_runs_to_its_end(bench: Bench) -> None:
    # MATH0 counts down from 5; MATH1 counts the passes. The loop changes MATH0 each time, so
    # the watchdog's shortcut (a jump back to the same state) does not fire.
    p = bench.buf(8)
    d = bench.b().math("ADD", "IMM", "ZERO", "MATH0", 4, imm=5)  # words 1-2
    d.math("ADD", "MATH1", "ONE", "MATH1", 8)  # 3
    d.math("SUB", "MATH0", "ONE", "MATH0", 4)  # 4
    d.jump(test="invall", condition=["MATH_Z"], offset=-2)  # 5 -> 3 while MATH0 != 0
    d.store(3, "math1", length=8, pointer=p)
    assert bench.run(d).status == 0
    assert bench.read(p, 8) == be(5)


def test_jumps_off_a_command_or_out_of_the_descriptor_are_deco_0x0d(bench: Bench) -> None:
    d = bench.b().jump(offset=2).math("ADD", "ZERO", "IMM", "MATH0", imm=1)  # into the imm
    assert bench.run(d).status == DECO(0x0D, 1)
    assert bench.run(bench.b().jump(offset=-1)).status == DECO(0x0D, 1)  # the header
    assert bench.run(bench.b().jump(offset=5)).status == DECO(0x0D, 1)
    assert bench.run(bench.b().jump(type="gosub", offset=1)).status == DECO(0x0D, 1)
    assert bench.run(bench.b().jump(offset=1)).status == 0  # just past the end: the end


def test_nonlocal_jump_keeps_the_keys_and_marks_its_errors(bench: Bench) -> None:
    key, pt = os.urandom(16), os.urandom(32)
    p_out = bench.buf(32)
    second = bench.b().operation(1, "AES", aai="ECB", state="initfinal", encrypt=True)
    second.fifo_load(1, "MSG", data=pt, last1=True)
    second.fifo_store(0, "MESSAGE_DATA", length=32, pointer=p_out)
    first = bench.b().key(1, data=key).jump(type="nonlocal", pointer=bench.place(second))
    first.jump(type="halt-user", offset=0x99)  # never reached
    assert bench.run(first).status == 0
    want = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update(pt)
    assert bench.read(p_out, 32) == want
    # An error in the descriptor jumped to: its index there, and status bit 27.
    broken = bench.b().raw(0x30000000)
    jump = bench.b().jump(type="nonlocal", pointer=bench.place(broken))
    assert bench.run(jump).status == DECO(0x04, 1) | 0x0800_0000
    # A descriptor with a shared descriptor cannot be jumped to.
    shared = bench.b(kind="shared").jump(type="halt-user", offset=1)
    target = bench.place(bench.shared_job(shared))
    jump = bench.b().math("ADD", "ZERO", "ZERO", "NONE").jump(type="nonlocal", pointer=target)
    assert bench.run(jump).status == DECO(0x0D, 2) | 0x0800_0000


# ---------------------------------------------------------------------- shared descriptors


@pytest.mark.parametrize("reverse", [True, False])
def test_shared_and_job_parts_run_in_the_header_s_order(bench: Bench, reverse: bool) -> None:
    p_shared, p_job = bench.buf(8), bench.buf(8)

    def step(d: DescriptorBuilder, digit: int, p: int) -> DescriptorBuilder:
        d.math("LSHIFT", "MATH0", "IMM", "MATH0", 8, imm=4, ifb=True)
        d.math("OR", "MATH0", "IMM", "MATH0", 8, imm=digit, ifb=True)
        return d.store(3, "math0", length=8, pointer=p)

    shared = step(bench.b(kind="shared", share="serial"), 1, p_shared)
    job = step(bench.shared_job(shared, reverse=reverse), 2, p_job)
    assert bench.run(job).status == 0
    if reverse:  # the job's commands, then the shared descriptor's
        assert (bench.read(p_job, 8), bench.read(p_shared, 8)) == (be(0x2), be(0x21))
    else:
        assert (bench.read(p_shared, 8), bench.read(p_job, 8)) == (be(0x1), be(0x12))


def test_shared_pdb_is_skipped_and_indexes_count_from_the_shared_descriptor(bench: Bench) -> None:
    shared = bench.b(kind="shared").pdb_words(0x30000000, 0x30000000)  # not commands
    shared.jump(type="halt-user", offset=0x5A)
    job = bench.shared_job(shared)
    assert bench.run(job).status == 0x3000035A  # the HALT is shared word 3
    # A bad command in the job part: its index is the shared length plus its own index.
    job = bench.shared_job(bench.b(kind="shared").math("ADD", "ZERO", "ZERO", "NONE"))
    job.raw(0x30000000)
    pw = 2 if bench.long else 1
    assert bench.run(job).status == DECO(0x04, 2 + 1 + pw)


def test_shared_header_errors(bench: Bench) -> None:
    halt = bench.b(kind="shared").jump(type="halt-user", offset=1).words()
    ok = bench.b(shared_pointer=bench.place(halt), shared_length=2, reverse=True).words()
    assert bench.run(ok).status == 0x30000101
    not_shared = bench.b().jump(type="halt-user", offset=1).words()  # a job header there
    bad = bench.b(shared_pointer=bench.place(not_shared), shared_length=2).words()
    assert bench.run(bad).status == DECO(0x12)
    too_long = bench.b(shared_pointer=bench.place(halt), shared_length=1).words()
    assert bench.run(too_long).status == DECO(0x12)  # the header says 2, the job 1
    big = bench.b(kind="shared")
    for _ in range(30):
        big.math("ADD", "ZERO", "ZERO", "NONE")
    job = bench.shared_job(big)
    for _ in range(32):
        job.math("ADD", "ZERO", "ZERO", "NONE")
    assert bench.run(job).status == DECO(0x13)  # 31 + 34 words: over the 64-word buffer


def test_a_jump_cannot_leave_its_part(bench: Bench) -> None:
    shared = bench.b(kind="shared").jump(type="halt-user", offset=0x33)
    job = bench.shared_job(shared).jump(offset=1)  # just past the job's end: the shared runs
    assert bench.run(job).status == 0x30000133
    job = bench.shared_job(shared).jump(offset=2)
    pw = 2 if bench.long else 1
    assert bench.run(job).status == DECO(0x0D, 2 + 1 + pw)


# ---------------------------------------------------------------------- sequences and VLF


def test_seq_lengths_count_down_and_vlf_uses_them(bench: Bench) -> None:
    data = os.urandom(40)
    p_out, p_lens = bench.buf(40), bench.buf(16)
    d = bench.b().seq_in_ptr(pointer=bench.buf(data), length=40, flags=["EXT"])
    d.seq_out_ptr(pointer=p_out, length=40)
    d.load(3, "math3", offset=4, length=4, seq=True)  # 0x1E0B0404: the first 4 bytes
    d.math("ADD", "SEQINLEN", "ZERO", "MATH0", 4)  # 36 left
    d.math("SUB", "SEQINLEN", "IMM", "VARSEQINLEN", 4, imm=6)  # 30
    d.fifo_load(0, "MSG", seq=True, length=6)  # class 0: skip 6 input bytes
    d.math("ADD", "VARSEQINLEN", "ZERO", "VARSEQOUTLEN", 4)
    d.move("MATH3", "OUTFIFO", offset=4, length=4)  # the 4 loaded bytes, out
    d.fifo_store(0, "MESSAGE_DATA", seq=True, length=4)
    d.math("ADD", "SEQOUTLEN", "ZERO", "MATH1", 4)  # 36 left after the store
    d.store(3, "math0", length=16, pointer=p_lens)
    assert bench.run(d).status == 0
    assert bench.read(p_lens, 16) == be(36) + be(36)
    assert bench.read(p_out, 4) == data[:4]


def test_vlf_zero_length_ends_a_hash_and_skip_writes_nothing(bench: Bench) -> None:
    p_out = bench.buf(b"\x5a" * 40)
    d = bench.b().seq_out_ptr(pointer=p_out, length=40)
    d.operation(2, "SHA256", state="initfinal", encrypt=True)
    d.math("ADD", "SEQINLEN", "MATH0", "VARSEQINLEN")  # no SEQ IN PTR: SIL reads 0
    d.fifo_load(2, "MSG", seq=True, vlf=True, last2=True)
    d.math("ADD", "ZERO", "IMM", "VARSEQOUTLEN", imm=8)
    d.fifo_store(0, "SKIP", seq=True, vlf=True)  # steps over 8 bytes
    d.store(2, "context", length=32, seq=True)
    assert bench.run(d).status == 0
    assert bench.read(p_out, 40) == b"\x5a" * 8 + hashlib.sha256().digest()


def test_sequence_errors(bench: Bench) -> None:
    d = bench.b().seq_in_ptr(pointer=bench.buf(8), length=8).fifo_load(0, "MSG", seq=True, length=9)
    pw = 2 if bench.long else 1
    assert bench.run(d).status == DECO(0x10, 2 + pw)  # underflow
    d = bench.b().fifo_load(2, "MSG", seq=True, length=1)
    assert bench.run(d).status == DECO(0x10, 1)  # no sequence
    d = bench.b().seq_in_ptr(length=4, flags=["RTO"])
    assert bench.run(d).status == DECO(0x10, 1)  # nothing to restore
    d = bench.b().math("ADD", "ZERO", "IMM", "VARSEQINLEN", imm=300)
    d.load(1, "context", seq=True, vlf=True)
    assert bench.run(d).status == DECO(0x15, 3)  # VLF longer than a LOAD can be


def test_rto_rewinds_and_pre_continues(bench: Bench) -> None:
    data = bytes(range(32))
    p = bench.buf(24)
    d = bench.b().seq_in_ptr(pointer=bench.buf(data), length=8)
    d.seq_out_ptr(pointer=p, length=24)
    d.load(1, "context", length=8, seq=True)
    d.seq_in_ptr(length=8, flags=["RTO"])  # the same 8 bytes again
    d.load(1, "context", offset=8, length=8, seq=True)
    d.seq_in_ptr(length=8, flags=["PRE"])  # the next 8
    d.load(1, "context", offset=16, length=8, seq=True)
    d.store(1, "context", length=24, seq=True)
    assert bench.run(d).status == 0
    assert bench.read(p, 24) == data[:8] + data[:8] + data[8:16]


# ---------------------------------------------------------------------- S/G tables


@pytest.mark.parametrize("long", [False, True])
def test_sg_tables_ext_offset_and_zero_length_entries(long: bool) -> None:
    bench = Bench("t2080" if long else "imx7d", long)
    data = os.urandom(50)
    a, b, c = bench.buf(b"xx" + data[:10]), bench.buf(data[10:30]), bench.buf(data[30:])
    order = bench.order
    tail = bench.buf(sg_table([(c, 20)], order))
    table = bench.buf(
        sg_entry(a, 10, order, offset=2)  # the address plus 2
        + sg_entry(b, 0, order)  # skipped
        + sg_entry(b, 20, order)
        + sg_entry(tail, 0, order, ext=True)  # continue in another table
    )
    p_digest = bench.buf(32)
    d = bench.b().seq_in_ptr(pointer=table, length=50, flags=["SGF", "EXT"])
    d.operation(2, "SHA256", state="initfinal", encrypt=True)
    d.fifo_load(2, "MSG", seq=True, length=50, last2=True)
    d.store(2, "context", length=32, pointer=p_digest)
    assert bench.run(d).status == 0
    assert bench.read(p_digest, 32) == hashlib.sha256(data).digest()


def test_sg_errors(bench: Bench) -> None:
    order = bench.order
    pw = 2 if bench.long else 1
    short = bench.buf(sg_table([(bench.buf(8), 8)], order))  # FIN after 8 bytes
    d = bench.b().seq_in_ptr(pointer=short, length=16, flags=["SGF"])
    d.operation(2, "SHA256", encrypt=True).fifo_load(2, "MSG", seq=True, length=16, last2=True)
    assert bench.run(d).status == DECO(0x01, 3 + pw)  # past FIN
    null = bench.buf(sg_entry(bench.buf(8), 8, order) + bytes(16))
    d = bench.b().seq_in_ptr(pointer=null, length=16, flags=["SGF"])
    d.operation(2, "SHA256", encrypt=True).fifo_load(2, "MSG", seq=True, length=16, last2=True)
    assert bench.run(d).status == DECO(0x02, 3 + pw)  # an all-zero entry
    loop = bench.mem.alloc(16)
    bench.mem.write(loop, sg_entry(loop, 0, order, ext=True))  # an EXT entry to itself
    d = (
        bench.b()
        .seq_in_ptr(pointer=loop, length=4, flags=["SGF"])
        .load(1, "context", length=4, seq=True)
    )
    assert bench.run(d).status == DECO(0x1C, 2 + pw)


def test_fifo_load_and_store_through_sg_pointers(bench: Bench) -> None:
    key, pt = os.urandom(16), os.urandom(48)
    order = bench.order
    src = bench.buf(sg_table([(bench.buf(pt[:5]), 5), (bench.buf(pt[5:]), 43)], order))
    o1, o2 = bench.buf(30), bench.buf(18)
    dst = bench.buf(sg_table([(o1, 30), (o2, 18)], order))
    d = bench.b().key(1, data=key).operation(1, "AES", aai="ECB", encrypt=True)
    d.fifo_load(1, "MSG", pointer=src, length=48, sgf=True, last1=True)
    d.fifo_store(0, "MESSAGE_DATA", pointer=dst, length=48, sgf=True)
    assert bench.run(d).status == 0
    want = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update(pt)
    assert bench.read(o1, 30) + bench.read(o2, 18) == want


# ---------------------------------------------------------------------- MOVE and DECO registers


def test_rfc3686_nonce_through_the_output_fifo_into_the_context(bench: Bench) -> None:
    # caamalg's rfc3686: LOAD IMM the nonce into the output FIFO, MOVE it into context[16..20].
    p = bench.buf(32)
    d = bench.b().load(0, "output-fifo", data=b"NNNN")
    d.move("OUTFIFO", "CLASS1CTX", offset=16, length=4)
    d.load(1, "context", offset=20, data=b"IVIVIVIV")
    d.move("CLASS1CTX", "MATH2", offset=16, length=12)  # the offset is the context's
    d.move("MATH2", "CLASS2CTX", offset=4, length=12)  # ... and here the context's again
    d.store(2, "context", length=16, pointer=p)
    assert bench.run(d).status == 0
    assert bench.read(p, 16) == bytes(4) + b"NNNNIVIVIVIV"


def test_move_len_and_move_errors(bench: Bench) -> None:
    p = bench.buf(16)
    d = bench.b().load(1, "context", data=bytes(range(16)))
    d.math("ADD", "ZERO", "IMM", "MATH0", imm=6)
    d.move_len("CLASS1CTX", "MATH1", length_reg="MATH0", offset=2)
    d.store(3, "math1", length=8, pointer=p)
    assert bench.run(d).status == 0
    assert bench.read(p, 8) == bytes(range(2, 8)) + bytes(2)
    assert bench.run(bench.b().move("MATH3", "MATH0", length=9)).status == DECO(0x0C, 1)
    assert bench.run(bench.b().move("OUTFIFO", "MATH0", length=1)).status == DECO(0x1C, 1)


def test_a_command_moved_into_the_descriptor_buffer_runs(bench: Bench) -> None:
    # DPDK-style self-modification: build a HALT_USER in MATH0 and write it over word 4.
    halt = bench.b().jump(type="halt-user", offset=0x42).words()[1]
    d = bench.b().load(3, "math0", data=be(halt, 4), offset=0)  # words 1-2
    d.move("MATH0", "DESCBUF", offset=4 * 4, length=4, waitcomp=True)  # 3
    d.raw(0x30000000)  # 4: an invalid command, until the MOVE replaces it
    assert bench.run(d).status == 0x30000442


def test_deco_control_dpovrd_and_descbuf_loads(bench: Bench) -> None:
    p = bench.buf(8)
    d = bench.b().load(3, "decoctrl", offset=0x3, data=b"")  # 0x16860300
    d.load(3, "decoctrl", offset=0x8, data=b"")  # disable automatic info-FIFO entries
    d.load(3, "dpovrd", data=b"\x00\x00\x01\x02")
    d.math("ADD", "DPOVRD", "ONE", "DPOVRD")
    d.store(3, "dpovrd", length=4, pointer=p)
    assert bench.run(d).status == 0
    assert bench.read(p, 4) == b"\x00\x00\x01\x03"
    bad = bench.b().load(3, "decoctrl", offset=0x3, length=4, pointer=p)
    assert bench.run(bad).status == DECO(0x07, 1)
