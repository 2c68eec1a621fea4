"""RNG4 as Linux drives it: ctrl.c on DECO 0 (instantiate SH0/SH1 with PR, SK, RDSTA), caamrng."""

from __future__ import annotations

import pytest
from caam_linux import (
    CAAMPRNG_RESEED,
    DECO_OK,
    EAGAIN,
    Deco0,
    Ring,
    caamrng_desc,
    deinstantiate_rng,
    deinstantiation_desc,
    header,
    instantiate_rng,
    instantiation_desc,
    kick_trng,
    probe_rng,
)

from cryptoffload.caam import regs, status
from cryptoffload.caam.model import CaamModel

PARTS = ["t2080", "t1040", "imx7d"]
ALL_WITH_PR = regs.RDSTA_IF0 | regs.RDSTA_IF1 | regs.RDSTA_PR0 | regs.RDSTA_PR1


def rng_error(err: int, index: int) -> int:
    return status.ccb(status.CHA_RNG, err, index)


def masked(word: int) -> int:
    return word & regs.DECO_OP_STATUS_HI_ERR_MASK


@pytest.fixture(params=PARTS)
def model(request: pytest.FixtureRequest) -> CaamModel:
    return CaamModel(request.param, seed=b"rng-linux")


# ---------------------------------------------------------------------- ctrl.c at probe


def test_probe_instantiates_both_handles_with_pr_and_the_secure_keys(model: CaamModel) -> None:
    assert model.read32(regs.RDSTA) == 0
    ret, mine = probe_rng(model)
    assert ret == 0
    assert mine == regs.RDSTA_MASK  # both handles, PR bits included, are this probe's
    rdsta = model.read32(regs.RDSTA)
    assert rdsta == ALL_WITH_PR | regs.RDSTA_SKVN == 0x40000033
    for sh in (0, 1):  # the kernel's check, handle by handle
        want = (regs.RDSTA_IF0 | regs.RDSTA_PR0) << sh
        assert rdsta & want == want
    assert model.read32(regs.SCFGR) & regs.SCFGR_RDBENABLE
    # Two descriptors ran on DECO 0 (SH0 with SK, then SH1), counted as jobs of the RNG.
    snap = model.counters.snapshot()
    assert snap["jobs"] == 2 and snap["per_cha"] == {"RNG": 2}


def test_each_instantiation_step_reports_what_ctrl_c_accepts(model: CaamModel) -> None:
    deco = Deco0(model)
    kick_trng(model, 3200)
    assert deco.run(instantiation_desc(0, gen_sk=True)) in DECO_OK
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0 | regs.RDSTA_PR0 | regs.RDSTA_SKVN
    assert deco.run(instantiation_desc(1, gen_sk=True)) in DECO_OK  # SK only goes with SH0
    assert model.read32(regs.RDSTA) == ALL_WITH_PR | regs.RDSTA_SKVN
    assert instantiation_desc(0, gen_sk=True) == [
        0xB0800007, 0x82500006, 0xA2000001, 0x10880004, 1, 0x82501000, 0xA2800000
    ]  # fmt: skip
    assert instantiation_desc(1, gen_sk=False) == [0xB0800003, 0x82500016, 0xA2800000]


def test_the_trng_registers_kick_trng_programs_read_back(model: CaamModel) -> None:
    assert model.read32(regs.RTSDCTL) == 0  # power-on values are not public: the model reads 0
    kick_trng(model, 3200)
    assert model.read32(regs.RTSDCTL) == 3200 << 16 | 512
    assert model.read32(regs.RTFRQMIN) == 800 and model.read32(regs.RTFRQMAX) == 1 << 20
    assert model.read32(regs.RTSCMISC) == 0x20020
    assert model.read32(regs.RTPKRRNG) == 570 and model.read32(regs.RTPKRMAX) == 1600
    assert model.read32(regs.RTSCML) == 122 << 16 | 317
    assert [model.read32(r) for r in regs.RTSCRL] == [
        80 << 16 | 107,
        57 << 16 | 62,
        39 << 16 | 39,
        27 << 16 | 26,
        19 << 16 | 18,
        18 << 16 | 17,
    ]
    ctl = model.read32(regs.RTMCTL)
    assert not ctl & (regs.RTMCTL_PRGM | regs.RTMCTL_ACC)
    assert ctl & regs.RTMCTL_SAMP_MODE_MASK == regs.RTMCTL_SAMP_MODE_RAW_ES_SC


def test_a_failed_instantiation_is_retried_with_a_longer_entropy_delay() -> None:
    model = CaamModel("t2080", seed=b"retry")
    model.fail_rng_instantiation()
    ret, _ = probe_rng(model)
    assert ret == 0
    assert model.read32(regs.RTSDCTL) >> 16 == 6400  # the second kick doubled 3200
    assert model.read32(regs.RDSTA) == ALL_WITH_PR | regs.RDSTA_SKVN


def test_a_handle_instantiated_without_pr_is_torn_down_and_redone(model: CaamModel) -> None:
    ring = Ring(model)
    # The project's driver (or a boot loader) first: the brief's recipe, SH0 without PR, the
    # secure keys made.
    ring.driver.ensure_rng()
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0 | regs.RDSTA_SKVN
    ret, mine = probe_rng(model)
    assert ret == 0
    # SKVN was set, so SH0's new descriptor has no SK; the PR bits and SH1 are the probe's.
    assert model.read32(regs.RDSTA) == ALL_WITH_PR | regs.RDSTA_SKVN
    assert mine == regs.RDSTA_MASK & ~regs.RDSTA_IF0


def test_probe_on_a_block_already_set_up_does_nothing(model: CaamModel) -> None:
    assert probe_rng(model)[0] == 0
    jobs = model.counters.snapshot()["jobs"]
    ret, mine = probe_rng(model)
    assert ret == 0 and mine == 0
    assert model.counters.snapshot()["jobs"] == jobs


def test_driver_removal_deinstantiates_its_handles(model: CaamModel) -> None:
    ret, mine = probe_rng(model)
    assert ret == 0
    assert deinstantiate_rng(model, mine) == 0
    # The secure keys stay valid until a reset; the handles and their PR bits are gone.
    assert model.read32(regs.RDSTA) == regs.RDSTA_SKVN
    assert probe_rng(model)[0] == 0  # and a new probe brings them back, without SK
    assert model.read32(regs.RDSTA) == ALL_WITH_PR | regs.RDSTA_SKVN


def test_virtualized_parts_take_decorsr_first(model: CaamModel) -> None:
    ret, _ = probe_rng(model, virt=True)
    assert ret == 0
    assert model.read32(regs.DECORSR) == 0 and model.read32(regs.DECORR) == 0


def test_software_reset_clears_the_handles_and_the_secure_keys(model: CaamModel) -> None:
    probe_rng(model)
    model.write32(regs.MCFGR, regs.MCFGR_SWRESET)
    assert model.read32(regs.RDSTA) == 0
    assert model.read32(regs.RTSDCTL) == 0
    assert probe_rng(model)[0] == 0
    assert model.read32(regs.RDSTA) == ALL_WITH_PR | regs.RDSTA_SKVN


# ---------------------------------------------------------------------- DECO 0's registers


def test_deco_request_is_granted_and_released(model: CaamModel) -> None:
    assert model.read32(regs.DECORR) == 0
    model.write32(regs.DECORR, regs.DECORR_RQD0ENABLE)
    assert model.read32(regs.DECORR) == regs.DECORR_RQD0ENABLE | regs.DECORR_DEN0
    model.write32(regs.DECORR, 0)
    assert model.read32(regs.DECORR) == 0
    model.write32(regs.DECORSR, regs.DECORSR_JR0)
    assert model.read32(regs.DECORSR) == regs.DECORSR_JR0 | regs.DECORSR_VALID
    model.write32(regs.DECORSR, 0)
    assert model.read32(regs.DECORSR) == 0


def test_the_descriptor_buffer_reads_back_and_runs_only_when_held(model: CaamModel) -> None:
    base = regs.deco_base(0)
    words = instantiation_desc(0, gen_sk=True)
    for i, w in enumerate(words):
        model.write32(base + regs.DECO_DESCBUF + 4 * i, w)
    assert [model.read32(base + regs.DECO_DESCBUF + 4 * i) for i in range(len(words))] == words
    model.write32(base + regs.DECO_JR_CTL_HI, regs.DECO_JQCR_WHL | regs.DECO_JQCR_FOUR)
    assert model.read32(regs.RDSTA) == 0  # DECO 0 was not requested: nothing ran
    model.write32(regs.DECORR, regs.DECORR_RQD0ENABLE)
    model.write32(base + regs.DECO_JR_CTL_HI, regs.DECO_JQCR_FOUR)  # without WHL: stored only
    assert model.read32(regs.RDSTA) == 0
    model.write32(base + regs.DECO_JR_CTL_HI, regs.DECO_JQCR_WHL | regs.DECO_JQCR_FOUR)
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0 | regs.RDSTA_PR0 | regs.RDSTA_SKVN
    assert model.read32(base + regs.DECO_OP_STATUS_HI) in DECO_OK
    assert model.read32(base + regs.DECO_DESC_DBG) == 0  # VALID clear, state idle
    assert model.read32(base + 0x400) == 0  # the class-1 key register: never readable


def test_an_error_shows_in_the_status_and_the_debug_state(model: CaamModel) -> None:
    deco = Deco0(model)
    assert deco.run(instantiation_desc(0, gen_sk=True)) in DECO_OK
    word = deco.run(instantiation_desc(0, gen_sk=False))  # SH0 again
    assert word == masked(rng_error(status.ERR_RNG_INSTANTIATE, 1)) == 0x20000053
    base = regs.deco_base(0)
    assert model.read32(base + regs.DECO_OP_STATUS_HI) == 0x20000153  # index 1, unmasked
    dbg = model.read32(base + regs.DECO_DESC_DBG)
    assert not dbg & regs.DESC_DBG_VALID
    assert dbg >> regs.DESC_DBG_STATE_SHIFT & 0xF == regs.DECO_STATE_HOST_ERR
    assert model.read32(base + regs.DECO_DBG_EXEC) >> 16 & 0xF == regs.DECO_STATE_HOST_ERR
    assert deco.run(deinstantiation_desc(0)) in DECO_OK  # the next good run clears the state
    assert model.read32(base + regs.DECO_DESC_DBG) == 0


def test_the_only_deco_of_a_part_holds_ring_jobs_while_software_has_it() -> None:
    model = CaamModel("imx7d", seed=b"one deco")
    assert probe_rng(model)[0] == 0
    ring = Ring(model)
    out = ring.buf(16)
    model.write32(regs.DECORR, regs.DECORR_RQD0ENABLE)
    job = ring.submit(caamrng_desc(out))
    assert ring.poll() == 0 and not job.done  # waiting: DECO 0 is software's
    model.write32(regs.DECORR, 0)
    assert ring.poll() == 1 and job.wait() == 0
    assert ring.read(out, 16) != bytes(16)


def test_a_part_with_more_decos_runs_ring_jobs_meanwhile() -> None:
    model = CaamModel("t2080", seed=b"four decos")
    assert probe_rng(model)[0] == 0
    ring = Ring(model)
    model.write32(regs.DECORR, regs.DECORR_RQD0ENABLE)
    assert ring.run(caamrng_desc(ring.buf(16))) == 0


# ---------------------------------------------------------------------- failing cases


def test_generate_before_instantiation_is_0x54(model: CaamModel) -> None:
    ring = Ring(model)
    out = ring.buf(16)
    assert ring.run(caamrng_desc(out)) == rng_error(status.ERR_RNG_NOT_INSTANTIATED, 1)
    assert ring.read(out, 16) == bytes(16)
    assert status.Status(0x20000154).describe() == "CCB: RNG: RNG not instantiated (word 1)"


def test_prediction_resistance_on_a_handle_without_it_is_0x56(model: CaamModel) -> None:
    ring = Ring(model)
    ring.driver.ensure_rng()  # the brief's recipe: SH0 without prediction resistance
    out = ring.buf(16)
    word = ring.run(caamrng_desc(out, pr=True))
    assert word == rng_error(status.ERR_RNG_PREDICTION_RESISTANCE, 1) == 0x20000156
    assert ring.read(out, 16) == bytes(16)
    assert "prediction resistance" in status.Status(word).describe()
    assert ring.run(caamrng_desc(out, pr=False)) == 0  # without PR the handle serves
    assert ring.run([header(2), 0x8250000A]) == rng_error(6, 1)  # reseed with PR: the same


def test_instantiating_a_handle_twice_is_0x53(model: CaamModel) -> None:
    deco = Deco0(model)
    assert deco.run(instantiation_desc(1, gen_sk=False)) in DECO_OK
    assert deco.run(instantiation_desc(1, gen_sk=False)) == 0x20000053
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF1 | regs.RDSTA_PR1


def test_deinstantiating_a_bare_handle_is_0x58(model: CaamModel) -> None:
    assert Deco0(model).run(deinstantiation_desc(1)) == 0x20000058  # inferred error id 8


def test_secure_keys_twice_is_0x59(model: CaamModel) -> None:
    deco = Deco0(model)
    assert deco.run(instantiation_desc(0, gen_sk=True)) in DECO_OK
    assert deco.run(deinstantiation_desc(0)) in DECO_OK
    assert model.read32(regs.RDSTA) == regs.RDSTA_SKVN
    word = deco.run(instantiation_desc(0, gen_sk=True))  # SKVN ignored: SK asked again
    assert word == 0x20000059  # inferred: secure keys are made once per reset
    base = regs.deco_base(0)
    assert model.read32(base + regs.DECO_OP_STATUS_HI) == rng_error(9, 5)  # SK is word 5
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0 | regs.RDSTA_PR0 | regs.RDSTA_SKVN


def test_secure_keys_need_an_instantiated_handle(model: CaamModel) -> None:
    assert Deco0(model).run([header(3), 0x82501000, 0xA2800000]) == 0x20000054
    assert model.read32(regs.RDSTA) == 0


def test_without_clear_written_the_sk_operation_is_refused(model: CaamModel) -> None:
    words = instantiation_desc(0, gen_sk=True)
    no_clrw = [header(5), words[1], words[2], words[5], words[6]]
    assert Deco0(model).run(no_clrw) == masked(status.ccb(status.CHA_RNG, 0xD, 3))
    assert model.read32(regs.RDSTA) == regs.RDSTA_IF0 | regs.RDSTA_PR0  # no SKVN


# ---------------------------------------------------------------------- caamrng / caamprng


def test_hwrng_jobs_through_a_ring(model: CaamModel) -> None:
    assert probe_rng(model)[0] == 0
    ring = Ring(model)
    seen = set()
    for _ in range(8):
        out = ring.buf(16)
        assert ring.run(caamrng_desc(out)) == 0  # OPERATION 0x82500002: SH0, PR
        seen.add(ring.read(out, 16))
    assert len(seen) == 8 and bytes(16) not in seen


def test_stdrng_generate_and_reseed_without_pr(model: CaamModel) -> None:
    assert probe_rng(model)[0] == 0
    ring = Ring(model)
    out = ring.buf(0xFFFF)
    assert ring.run(caamrng_desc(out, 0xFFFF, pr=False)) == 0  # the largest request
    assert ring.run(CAAMPRNG_RESEED) == 0
    assert ring.read(out, 0xFFFF).count(0) < 400  # about 256 zero bytes expected
    short = ring.buf(16)
    assert ring.run(caamrng_desc(short, 32, pr=False)) == status.deco(status.DECO_DMA, 2)


def test_handle_1_generates_with_pr() -> None:
    model = CaamModel("t1040", seed=b"sh1")
    assert probe_rng(model)[0] == 0
    ring = Ring(model)
    out = ring.buf(32)
    assert ring.run([header(4), 0x82500012, 0x60340020, out]) == 0
    assert ring.read(out, 32) != bytes(32)


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    def first_bytes(seed: bytes) -> bytes:
        model = CaamModel("t2080", seed=seed)
        assert probe_rng(model)[0] == 0
        ring = Ring(model)
        out = ring.buf(16)
        assert ring.run(caamrng_desc(out)) == 0
        return ring.read(out, 16)

    assert first_bytes(b"a") == first_bytes(b"a") != first_bytes(b"b")


def test_eagain_when_a_handle_does_not_come_up() -> None:
    model = CaamModel("t2080", seed=b"eagain")
    deco = Deco0(model)
    model.fail_rng_instantiation()
    assert instantiate_rng(model, deco, gen_sk=True) == EAGAIN
    assert model.read32(regs.RDSTA) == 0
    assert instantiate_rng(model, deco, gen_sk=True) == 0
    assert model.read32(regs.RDSTA) == ALL_WITH_PR | regs.RDSTA_SKVN
