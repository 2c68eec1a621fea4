"""The CAAM model's shell: capability registers, SVR, job ring protocol, faults and counters."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload.caam import regs, status
from cryptoffload.caam.model import CaamModel, core
from cryptoffload.caam.model.core import FLUSHED, SecAbsent
from cryptoffload.caam.model.deco import JobContext, JobResult
from cryptoffload.caam.model.parts import PARTS

SEC_PARTS = ["t2080", "t1040", "imx7d"]

#: What a driver must find by reading the registers (brief section 4; imx7d from its boot log).
EXPECTED = {
    "t2080": dict(
        era=6, JR=4, DECO=4, AES=4, MD=4, RNG=1, PK=1, pk_version=2, ip=0x0A10, rev=(5, 2)
    ),
    "t1040": dict(
        era=6, JR=4, DECO=2, AES=2, MD=2, RNG=1, PK=1, pk_version=1, ip=0x0A10, rev=(5, 0)
    ),
    "imx7d": dict(
        era=8, JR=3, DECO=1, AES=1, MD=1, RNG=1, PK=1, pk_version=1, ip=0x0A16, rev=(3, 0)
    ),
}


# A tiny driver that knows only the register map (regs.py) and the brief's ring protocol.


class TinyDriver:
    """Ring setup, enqueue and dequeue as the brief describes them; byte order from CSTA."""

    def __init__(
        self, model: CaamModel, ring: int = 0, depth: int = 4, out_depth: int | None = None
    ):
        self.model = model
        self.base = regs.jr_base(ring)
        # Discover through this ring's own page: the ID registers are mirrored there.
        self.caps = regs.discover(lambda off: model.read32(self.base + off))
        self.order = self.caps.byteorder
        self.long = bool(model.read32(regs.MCFGR) & regs.MCFGR_LONG_PTR)
        self.ptr = 8 if self.long else 4
        self.depth = depth
        self.out_depth = depth if out_depth is None else out_depth
        self.inring = model.memory.alloc(self.depth * self.ptr)
        self.outring = model.memory.alloc(self.out_depth * (self.ptr + 4))
        self.write(regs.IRBAR_HI, 0)
        self.write(regs.IRBAR_LO, self.inring)
        self.write(regs.ORBAR_HI, 0)
        self.write(regs.ORBAR_LO, self.outring)
        self.write(regs.IRSR, self.depth)
        self.write(regs.ORSR, self.out_depth)
        self.wi = 0
        self.ri = 0

    def read(self, reg: int) -> int:
        return self.model.read32(self.base + reg)

    def write(self, reg: int, value: int) -> None:
        self.model.write32(self.base + reg, value)

    def pointer_bytes(self, addr: int) -> bytes:
        if self.long:
            return (addr >> 32).to_bytes(4, self.order) + (addr & 0xFFFFFFFF).to_bytes(
                4, self.order
            )
        return addr.to_bytes(4, self.order)

    def enqueue(self, desc: int) -> bool:
        if self.read(regs.IRSAR) == 0:
            return False
        self.model.memory.write(self.inring + self.wi * self.ptr, self.pointer_bytes(desc))
        self.wi = (self.wi + 1) % self.depth
        self.write(regs.IRJAR, 1)
        return True

    def dequeue(self) -> list[tuple[int, int]]:
        done = []
        size = self.ptr + 4
        while self.read(regs.ORSFR) > 0:
            raw = self.model.memory.read(self.outring + self.ri * size, size)
            words = [int.from_bytes(raw[i : i + 4], self.order) for i in range(0, size, 4)]
            desc = (words[0] << 32 | words[1]) if self.long else words[0]
            done.append((desc, words[-1]))
            self.ri = (self.ri + 1) % self.out_depth
            self.write(regs.ORJRR, 1)
        return done

    def put_words(self, words: list[int]) -> int:
        addr = self.model.memory.alloc(4 * len(words))
        data = b"".join(w.to_bytes(4, self.order) for w in words)
        self.model.memory.write(addr, data)
        return addr

    def run(self, desc: int) -> int:
        assert self.enqueue(desc)
        done = dict(self.dequeue())
        return done[desc]


# A stand-in for the DECO, so that the ring side is tested on its own. Its "descriptor" is three
# words: the status to report, an output address and a length; it fills the output with a byte
# derived from the descriptor address.


class FakeDeco:
    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []

    def __call__(self, desc: int, ctx: JobContext) -> JobResult:
        self.calls.append((desc, ctx.long_pointers))
        if not ctx.memory.valid(desc, 12):
            return JobResult(status.job_ring(status.JR_BAD_DESC_ADDR), (), ())
        raw = ctx.memory.read(desc, 12)
        word, out, n = (int.from_bytes(raw[i : i + 4], ctx.part.byteorder) for i in (0, 4, 8))
        if n:
            ctx.memory.write(out, bytes([desc & 0xFF]) * n)
        return JobResult(word, ("AES", "MD"), ((out, n),) if n else ())


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDeco:
    deco = FakeDeco()
    monkeypatch.setattr(core, "run_job", deco)
    return deco


def fake_job(drv: TinyDriver, word: int = 0, n: int = 16) -> tuple[int, int]:
    out = drv.model.memory.alloc(max(n, 1))
    return drv.put_words([word, out, n]), out


# Capability registers, byte order, SVR.


@pytest.mark.parametrize("name", SEC_PARTS)
def test_capability_registers_decode_to_the_part(name: str) -> None:
    model = CaamModel(name)
    caps = regs.discover(model.read32)
    want = EXPECTED[name]
    assert caps.era == want["era"]
    for cha in ("JR", "DECO", "AES", "MD", "RNG", "PK"):
        assert caps.counts[cha] == want[cha], cha
    assert caps.versions["PK"] == want["pk_version"]
    assert caps.versions["AES"] == regs.AES_HP
    assert caps.versions["MD"] == regs.MD_HP
    assert caps.versions["RNG"] == regs.RNG4
    assert caps.counts["DES"] == 0
    assert caps.gcm
    assert (caps.ip_id, (caps.major, caps.minor)) == (want["ip"], want["rev"])
    part = PARTS[name]
    assert (part.era, part.job_rings, part.decos, part.aesa, part.mdha) == (
        want["era"],
        want["JR"],
        want["DECO"],
        want["AES"],
        want["MD"],
    )
    assert (part.rngs, part.pkha, part.pkha_version) == (
        want["RNG"],
        want["PK"],
        want["pk_version"],
    )


def test_raw_capability_words_of_the_t2080() -> None:
    model = CaamModel("t2080")
    assert model.read32(regs.CCBVID) == 0x06000000
    assert model.read32(regs.CHANUM_MS) == 0x44000000
    assert model.read32(regs.CHANUM_LS) == 0x10014004
    assert model.read32(regs.CHAVID_LS) == 0x20042004
    assert model.read32(regs.CAAMVID_MS) == 0x0A100502
    assert model.read32(regs.CTPR_MS) & regs.CTPR_MS_PS


def test_imx7d_reads_like_its_boot_log() -> None:
    model = CaamModel("imx7d")
    device_id = model.read32(regs.CAAMVID_MS) << 32 | model.read32(regs.CAAMVID_LS)
    assert device_id == 0x0A16030000000000
    assert regs.era(model.read32(regs.CCBVID)) == 8
    assert not model.read32(regs.CTPR_MS) & regs.CTPR_MS_PS
    assert PARTS["imx7d"].builtin_curves and PARTS["imx7d"].allow_prehashed_flag
    assert not PARTS["t2080"].builtin_curves and not PARTS["t2080"].allow_prehashed_flag


@pytest.mark.parametrize("name", SEC_PARTS)
def test_id_registers_are_mirrored_in_every_ring_page(name: str) -> None:
    model = CaamModel(name)
    offsets = range(regs.ID_SPACE_START, regs.PAGE_SIZE, 4)
    page0 = [model.read32(off) for off in offsets]
    assert any(page0)
    for n in range(model.part.job_rings):
        assert [model.read32(regs.jr_base(n) + off) for off in offsets] == page0
    # No ring lives past the last one: nothing is mirrored there.
    beyond = regs.jr_base(model.part.job_rings)
    assert model.read32(beyond + regs.CCBVID) == 0
    model.write32(regs.CCBVID, 0)  # read-only
    assert model.read32(regs.CCBVID) == page0[(regs.CCBVID - regs.ID_SPACE_START) // 4]


@pytest.mark.parametrize(
    ("name", "order"), [("t2080", "big"), ("t1040", "big"), ("imx7d", "little")]
)
def test_csta_tells_the_byte_order(name: str, order: str) -> None:
    model = CaamModel(name)
    csta = model.read32(regs.CSTA)
    assert regs.little_endian(csta) == (order == "little")
    # Read through the wrong byte order, PLEND shows up as ALT_PLEND: the answer is the same.
    swapped = int.from_bytes(csta.to_bytes(4, "big"), "little")
    assert regs.little_endian(swapped) == (order == "little")
    assert model.part.byteorder == order


def test_svr_says_which_parts_have_the_sec() -> None:
    t2080, t1040, nosec = PARTS["t2080"].svr, PARTS["t1040"].svr, PARTS["t2080-nosec"].svr
    assert regs.sec_present(t2080) and regs.sec_present(t1040)
    assert not regs.sec_present(nosec)
    assert regs.soc_id(t2080) == regs.soc_id(nosec) == 0x853000
    assert regs.soc_id(t1040) == 0x852000
    assert regs.soc_name(t2080) == "T2080E"
    assert regs.soc_name(nosec) == "T2080"
    assert regs.soc_name(t1040) == "T1040E"
    assert regs.soc_revision(t2080) == (1, 1)
    assert regs.soc_name(0x82400010) == "T4240"
    assert regs.soc_name(0x12345678) is None
    assert regs.sec_present(PARTS["imx7d"].svr)
    assert CaamModel("t2080").svr == t2080


def test_a_part_without_the_sec_faults_on_every_access() -> None:
    model = CaamModel("t2080-nosec")
    assert not model.part.sec
    assert not regs.sec_present(model.svr)
    for offset in (regs.CCBVID, regs.MCFGR, regs.RDSTA, regs.jr_base(0) + regs.IRSAR):
        with pytest.raises(SecAbsent, match="E bit"):
            model.read32(offset)
    with pytest.raises(SecAbsent):
        model.write32(regs.jr_base(0) + regs.IRJAR, 1)


def test_unknown_part_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"t1040, t2080, t2080-nosec"):
        CaamModel("t4240")
    assert CaamModel(PARTS["t1040"]).part is PARTS["t1040"]


def test_bad_register_accesses_are_refused() -> None:
    model = CaamModel("t2080")
    for offset in (-4, 0x2, regs.BLOCK_SIZE):
        with pytest.raises(ValueError, match="offset"):
            model.read32(offset)
    with pytest.raises(ValueError, match="32 bits"):
        model.write32(regs.MCFGR, 1 << 32)


# regs.py helpers on values no part of the model has.


def test_gcm_rule_before_era_10() -> None:
    assert not regs.gcm_supported(regs.AES_LP, 7)
    assert regs.gcm_supported(regs.AES_LP, 8)
    assert regs.gcm_supported(regs.AES_HP, 0)


def test_nibble_decoding() -> None:
    counts = regs.cha_counts(0x31000000, 0x10011001)
    assert (counts["JR"], counts["DECO"], counts["AES"], counts["MD"]) == (3, 1, 1, 1)
    assert (counts["RNG"], counts["PK"], counts["DES"]) == (1, 1, 0)
    versions = regs.cha_versions(0, 0x20042013)
    assert (versions["AES"], versions["DES"], versions["MD"], versions["PK"]) == (3, 1, 2, 2)
    assert regs.era(0x0A000000) == 10
    assert regs.caam_vid(0x0A160300) == (0x0A16, 3, 0)


def test_discover_on_an_era_10_block() -> None:
    aesa = (0x04 << 24) | (0x02 << 16) | regs.ERA10_AES_MISC_GCM | 0x02
    values = {
        regs.CCBVID: 10 << 24,
        regs.CHANUM_MS: 0x32000000,
        regs.AESA_VERSION: aesa,
        regs.MDHA_VERSION: (0x02 << 24) | 0x01,
        regs.RNG_VERSION: (0x05 << 24) | 0x01,
        regs.PKHA_VERSION: (0x01 << 24) | 0x01,
    }
    caps = regs.discover(lambda off: values.get(off, 0))
    assert caps.era == 10
    assert (caps.counts["AES"], caps.counts["MD"], caps.counts["RNG"], caps.counts["PK"]) == (
        2,
        1,
        1,
        1,
    )
    assert (caps.counts["JR"], caps.counts["DECO"]) == (3, 2)
    assert caps.versions["RNG"] == 5
    assert caps.gcm
    assert regs.cha_version_era10(aesa) == regs.ChaVersion(4, 2, 2, 2)
    values[regs.AESA_VERSION] = aesa & ~regs.ERA10_AES_MISC_GCM
    assert not regs.discover(lambda off: values.get(off, 0)).gcm


# The job ring protocol, with the stand-in DECO.


@pytest.mark.parametrize("name", SEC_PARTS)
def test_jobs_complete_through_the_ring(name: str, fake: FakeDeco) -> None:
    model = CaamModel(name)
    drv = TinyDriver(model, ring=model.part.job_rings - 1, depth=4)
    assert drv.read(regs.IRSAR) == 4
    jobs = [fake_job(drv, word) for word in (0, status.deco(status.DECO_HDRLEN, 3), 0)]
    for desc, _ in jobs:
        assert drv.enqueue(desc)
    assert drv.read(regs.ORSFR) == 3
    assert drv.read(regs.IRSAR) == 4
    assert (drv.read(regs.IRRIR), drv.read(regs.ORWIR)) == (3, 3)
    assert drv.read(regs.JRSTAR) == 0
    # The output entry is {descriptor pointer, status} in the part's byte order.
    raw = model.memory.read(drv.outring + 8, 8)
    assert raw == jobs[1][0].to_bytes(4, drv.order) + (0x40000313).to_bytes(4, drv.order)
    done = dict(drv.dequeue())
    assert done == {jobs[0][0]: 0, jobs[1][0]: 0x40000313, jobs[2][0]: 0}
    assert drv.read(regs.ORSFR) == 0
    for desc, out in jobs:
        assert model.memory.read(out, 16) == bytes([desc & 0xFF]) * 16
    assert [call[0] for call in fake.calls] == [desc for desc, _ in jobs]


def test_the_ring_wraps_around(fake: FakeDeco) -> None:
    drv = TinyDriver(CaamModel("imx7d"), depth=3)
    for i in range(10):
        desc, _ = fake_job(drv, word=i)
        assert drv.run(desc) == i
    assert (drv.read(regs.IRRIR), drv.read(regs.ORWIR)) == (10 % 3, 10 % 3)


def test_interrupt_status_and_mask(fake: FakeDeco) -> None:
    drv = TinyDriver(CaamModel("t2080"))
    assert drv.read(regs.JRINTR) == 0
    drv.enqueue(fake_job(drv)[0])
    assert drv.read(regs.JRINTR) & regs.JRINTR_JRI
    drv.write(regs.JRINTR, regs.JRINTR_JRI)
    assert drv.read(regs.JRINTR) == 0
    drv.dequeue()
    drv.write(regs.JRCFGR_LS, regs.JRCFGR_IMSK)
    drv.enqueue(fake_job(drv)[0])
    assert drv.read(regs.JRINTR) == 0
    assert drv.read(regs.ORSFR) == 1
    drv.write(regs.JRCFGR_LS, 0)  # unmasking with completions waiting raises the interrupt
    assert drv.read(regs.JRINTR) & regs.JRINTR_JRI


def test_ring_reset_sequence(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model, ring=1)
    drv.run(fake_job(drv)[0])
    drv.enqueue(fake_job(drv)[0])  # one completion left in the output ring
    drv.write(regs.JRCFGR_LS, regs.JRCFGR_IMSK)
    drv.write(regs.JRCR, regs.JRCR_RESET)
    assert drv.read(regs.JRCR) & regs.JRCR_RESET
    halts = [drv.read(regs.JRINTR) & regs.JRINTR_HALT_MASK for _ in range(3)]
    assert halts == [regs.JRINTR_HALT_IN_PROGRESS, regs.JRINTR_HALT_DONE, regs.JRINTR_HALT_DONE]
    drv.write(regs.IRJAR, 1)  # a halted ring takes no job
    assert len(fake.calls) == 2
    drv.write(regs.JRCR, regs.JRCR_RESET)
    assert [drv.read(regs.JRCR) & regs.JRCR_RESET for _ in range(2)] == [1, 0]
    assert drv.read(regs.JRINTR) == 0
    for reg in (regs.IRRIR, regs.ORWIR, regs.ORSFR):
        assert drv.read(reg) == 0
    assert drv.read(regs.IRSAR) == 4
    assert drv.read(regs.IRBAR_LO) == drv.inring  # bases and sizes are kept
    drv.write(regs.JRCFGR_LS, 0)
    drv.wi = drv.ri = 0
    desc, _ = fake_job(drv, word=7)
    assert drv.run(desc) == 7


def test_a_reset_returns_waiting_jobs_unrun(fake: FakeDeco) -> None:
    model = CaamModel("t1040")
    drv = TinyDriver(model)
    model.stall()
    descs = [fake_job(drv)[0] for _ in range(2)]
    for desc in descs:
        drv.enqueue(desc)
    drv.write(regs.JRCR, regs.JRCR_RESET)
    assert drv.read(regs.JRINTR) & regs.JRINTR_HALT_MASK == regs.JRINTR_HALT_IN_PROGRESS
    assert drv.dequeue() == [(d, FLUSHED) for d in descs]
    assert FLUSHED == 0x4000001A
    assert fake.calls == []
    assert model.counters.snapshot()["flushed"] == 2


def test_a_full_input_ring_refuses_jobs(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model, depth=2)
    model.stall()
    assert drv.enqueue(fake_job(drv)[0]) and drv.enqueue(fake_job(drv)[0])
    assert drv.read(regs.IRSAR) == 0
    extra, _ = fake_job(drv)
    assert not drv.enqueue(extra)
    drv.write(regs.IRJAR, 1)  # a driver that ignores IRSAR: a ring error, no job added
    intr = drv.read(regs.JRINTR)
    assert intr & regs.JRINTR_ERR
    assert (intr & regs.JRINTR_ERR_TYPE_MASK) >> regs.JRINTR_ERR_TYPE_SHIFT == regs.JR_ERR_ADD_OFL
    drv.write(regs.JRINTR, regs.JRINTR_ERR)
    assert not drv.read(regs.JRINTR) & regs.JRINTR_ERR
    model.unstall()
    assert len(drv.dequeue()) == 2
    assert len(fake.calls) == 2
    assert model.counters.snapshot()["ring_errors"] == 1


def test_fault_ring_full(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model)
    model.make_ring_full()
    assert drv.read(regs.IRSAR) == 0
    desc, _ = fake_job(drv)
    assert not drv.enqueue(desc)
    model.make_ring_full(False)
    assert drv.run(desc) == 0


def test_a_full_output_ring_holds_jobs_back(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model, depth=4, out_depth=2)
    descs = [fake_job(drv)[0] for _ in range(3)]
    for desc in descs:
        assert drv.enqueue(desc)
    assert drv.read(regs.ORSFR) == 2
    assert drv.read(regs.IRSAR) == 3  # the third job still holds its input slot
    assert len(fake.calls) == 2
    assert [d for d, _ in drv.dequeue()] == descs  # removing one lets the third run
    drv.write(regs.ORJRR, 1)  # removing more than the ring holds
    intr = drv.read(regs.JRINTR)
    assert (
        intr & regs.JRINTR_ERR_TYPE_MASK
    ) >> regs.JRINTR_ERR_TYPE_SHIFT == regs.JR_ERR_REMOVE_OFL


def test_stall_and_unstall(fake: FakeDeco) -> None:
    model = CaamModel("imx7d")
    drv = TinyDriver(model)
    model.stall()
    desc, _ = fake_job(drv, word=5)
    drv.enqueue(desc)
    assert drv.read(regs.ORSFR) == 0
    assert drv.read(regs.IRSAR) == 3
    assert fake.calls == []
    model.unstall()
    assert drv.dequeue() == [(desc, 5)]


def test_forced_status_applies_to_the_next_job_only(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model)
    model.force_status(0x4000_0016)
    first, out = fake_job(drv)
    assert drv.run(first) == 0x4000_0016
    assert model.memory.read(out, 16) == bytes([first & 0xFF]) * 16  # the job still ran
    assert drv.run(fake_job(drv)[0]) == 0
    assert model.counters.snapshot()["per_status"] == {"0x00000000": 1, "0x40000016": 1}


def test_corrupted_output(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model)
    model.corrupt_output()
    empty, _ = fake_job(drv, n=0)  # writes nothing: the fault waits for a job that does
    assert drv.run(empty) == 0
    desc, out = fake_job(drv)
    assert drv.run(desc) == 0
    good = bytes([desc & 0xFF]) * 16
    got = model.memory.read(out, 16)
    assert got != good
    assert got[0] == good[0] ^ 0xFF and got[1:] == good[1:]
    desc, out = fake_job(drv)
    drv.run(desc)
    assert model.memory.read(out, 16) == bytes([desc & 0xFF]) * 16


def test_long_pointers(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    assert not model.read32(regs.MCFGR) & regs.MCFGR_LONG_PTR  # 32-bit pointers at reset
    model.write32(regs.MCFGR, regs.MCFGR_LONG_PTR)
    assert model.read32(regs.MCFGR) & regs.MCFGR_LONG_PTR
    drv = TinyDriver(model)
    assert drv.ptr == 8
    desc, _ = fake_job(drv, word=9)
    assert drv.run(desc) == 9
    assert fake.calls[-1] == (desc, True)
    raw = model.memory.read(drv.outring, 12)
    assert raw == bytes(4) + desc.to_bytes(4, "big") + (9).to_bytes(4, "big")
    # The high word of an input entry is part of the address.
    far = (1 << 32) | desc
    assert drv.run(far) == status.job_ring(status.JR_BAD_DESC_ADDR)
    assert fake.calls[-1] == (far, True)


def test_imx7d_has_no_long_pointers() -> None:
    model = CaamModel("imx7d")
    model.write32(regs.MCFGR, regs.MCFGR_LONG_PTR)
    assert not model.read32(regs.MCFGR) & regs.MCFGR_LONG_PTR


def test_bad_ring_addresses_are_ring_errors(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model)
    drv.write(regs.IRBAR_LO, 0x1000)  # nothing allocated there
    drv.write(regs.IRJAR, 1)
    intr = drv.read(regs.JRINTR)
    assert (
        intr & regs.JRINTR_ERR_TYPE_MASK
    ) >> regs.JRINTR_ERR_TYPE_SHIFT == regs.JR_ERR_BAD_INPADDR
    drv.write(regs.JRINTR, regs.JRINTR_ERR)
    drv.write(regs.IRBAR_LO, drv.inring)
    drv.write(regs.ORBAR_LO, 0x1000)
    drv.wi = 1
    drv.enqueue(fake_job(drv)[0])
    intr = drv.read(regs.JRINTR)
    assert (
        intr & regs.JRINTR_ERR_TYPE_MASK
    ) >> regs.JRINTR_ERR_TYPE_SHIFT == regs.JR_ERR_BAD_OUTADDR
    assert drv.read(regs.ORSFR) == 0


def test_counters(fake: FakeDeco) -> None:
    model = CaamModel("t2080")
    drv = TinyDriver(model)
    for word in (0, 0, 0x2000_001A):
        drv.run(fake_job(drv, word)[0])
    snap = model.counters.snapshot()
    assert snap["jobs"] == 3
    assert snap["per_cha"] == {"AES": 3, "MD": 3}
    assert snap["per_status"] == {"0x00000000": 2, "0x2000001a": 1}
    snap["per_cha"]["AES"] = 0  # a copy
    assert model.counters.snapshot()["per_cha"]["AES"] == 3


# RNG4 state seen through RDSTA, with the stand-in DECO instantiating state handle 0.


@pytest.fixture
def instantiating(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(desc: int, ctx: JobContext) -> JobResult:
        return JobResult(ctx.rng.instantiate(0, index=1), ("RNG",), ())

    monkeypatch.setattr(core, "run_job", run)


def test_rdsta_reads_0_at_reset_and_after_instantiation_reads_if0(instantiating: None) -> None:
    model = CaamModel("t2080", seed=b"test")
    assert model.read32(regs.RDSTA) == 0
    drv = TinyDriver(model)
    assert drv.run(drv.put_words([0])) == 0
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0
    model.write32(regs.RDSTA, 0)  # read-only
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0


def test_rng_instantiation_fails_once(instantiating: None) -> None:
    model = CaamModel("imx7d", seed=b"test")
    drv = TinyDriver(model)
    model.fail_rng_instantiation()
    word = drv.run(drv.put_words([0]))
    assert status.Status(word).source == status.SRC_CCB
    assert (word >> 4) & 0xF == status.CHA_RNG
    assert model.read32(regs.RDSTA) == 0
    assert drv.run(drv.put_words([0])) == 0
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0


def test_software_reset(instantiating: None) -> None:
    model = CaamModel("t2080", seed=b"test")
    drv = TinyDriver(model)
    drv.run(drv.put_words([0]))
    model.write32(regs.RTMCTL, regs.RTMCTL_PRGM)
    assert model.read32(regs.RTMCTL) == regs.RTMCTL_PRGM
    model.write32(regs.MCFGR, regs.MCFGR_SWRESET)
    assert model.read32(regs.RDSTA) == 0
    assert model.read32(regs.RTMCTL) == 0
    assert drv.read(regs.IRSR) == 0 and drv.read(regs.ORWIR) == 0
    assert model.counters.snapshot()["jobs"] == 1


# End to end: the real DECO behind the ring, descriptors from the brief's recipes.


def hdr(length: int) -> int:
    return 0xB0800000 | length


@pytest.mark.parametrize("name", ["t2080", "imx7d"])
def test_sha256_through_the_ring(name: str) -> None:
    model = CaamModel(name)
    drv = TinyDriver(model)
    msg = bytes(range(200))
    p_msg = model.memory.alloc(len(msg))
    model.memory.write(p_msg, msg)
    p_digest = model.memory.alloc(32)
    desc = drv.put_words([hdr(6), 0x8443000D, 0x24140000 | len(msg), p_msg, 0x54200020, p_digest])
    assert drv.run(desc) == 0
    assert model.memory.read(p_digest, 32) == hashlib.sha256(msg).digest()
    snap = model.counters.snapshot()
    assert snap["jobs"] == 1 and snap["per_cha"] == {"MD": 1}


@pytest.mark.parametrize("name", ["t2080", "imx7d"])
def test_aes_cbc_through_the_ring(name: str) -> None:
    model = CaamModel(name)
    drv = TinyDriver(model)
    key, iv, msg = bytes(range(16)), bytes(range(100, 116)), bytes(range(64))
    mem = model.memory
    p_key, p_iv, p_in, p_out, p_next = (mem.alloc(n) for n in (16, 16, 64, 64, 16))
    mem.write(p_key, key)
    mem.write(p_iv, iv)
    mem.write(p_in, msg)
    words = [
        hdr(12),
        0x02200000 | len(key),
        p_key,
        0x12200010,
        p_iv,
        0x82100101,
        0x22120000 | len(msg),
        p_in,
        0x60300000 | len(msg),
        p_out,
        0x52200010,
        p_next,
    ]
    assert drv.run(drv.put_words(words)) == 0
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    want = enc.update(msg) + enc.finalize()
    assert mem.read(p_out, 64) == want
    assert mem.read(p_next, 16) == want[-16:]
    assert model.counters.snapshot()["per_cha"] == {"AES": 1}


@pytest.mark.parametrize("name", ["t1040", "imx7d"])
def test_rng_instantiate_descriptor_sets_rdsta(name: str) -> None:
    model = CaamModel(name, seed=b"seed")
    drv = TinyDriver(model)
    p_out = model.memory.alloc(32)
    # Generating before instantiation: CCB, RNG, not instantiated.
    generate = drv.put_words([hdr(4), 0x82500000, 0x60340020, p_out])
    assert drv.run(generate) == status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, 1)
    assert model.read32(regs.RDSTA) == 0
    instantiate = drv.put_words(
        [hdr(7), 0x82500004, 0xA2000001, 0x10880004, 0x00000001, 0x82501000, 0xA2800000]
    )
    word = drv.run(instantiate)
    assert word & 0xFF == 0  # 0, or a jump-halt source with a zero low byte (brief)
    assert model.read32(regs.RDSTA) & regs.RDSTA_IF0
    assert drv.run(generate) == 0
    assert model.memory.read(p_out, 32) != bytes(32)


def test_rng_instantiate_descriptor_fails_once_when_told() -> None:
    model = CaamModel("t2080", seed=b"seed")
    drv = TinyDriver(model)
    instantiate = drv.put_words(
        [hdr(7), 0x82500004, 0xA2000001, 0x10880004, 0x00000001, 0x82501000, 0xA2800000]
    )
    model.fail_rng_instantiation()
    word = drv.run(instantiate)
    assert status.Status(word).source == status.SRC_CCB
    assert (word >> 4) & 0xF == status.CHA_RNG
    assert model.read32(regs.RDSTA) == 0
    assert drv.run(instantiate) & 0xFF == 0
    assert model.read32(regs.RDSTA) & regs.RDSTA_IF0


def test_sha256_with_long_pointers() -> None:
    model = CaamModel("t2080")
    model.write32(regs.MCFGR, regs.MCFGR_LONG_PTR)
    drv = TinyDriver(model)
    msg = b"abc"
    p_msg, p_digest = model.memory.alloc(3), model.memory.alloc(32)
    model.memory.write(p_msg, msg)
    desc = drv.put_words([hdr(8), 0x8443000D, 0x24140003, 0, p_msg, 0x54200020, 0, p_digest])
    assert drv.run(desc) == 0
    assert model.memory.read(p_digest, 32) == hashlib.sha256(msg).digest()
