"""The model's halves the device process stands on: queued jobs (taken, run and completed by
the caller, as DECOs would) and interrupt coalescing (JRCFGR ICEN, ICDCT, ICTT), in-process."""

from __future__ import annotations

import hashlib
import time

from cryptoffload.caam import regs
from cryptoffload.caam.device.timing import Decos, Timing
from cryptoffload.caam.driver import Driver
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.model import CaamModel
from cryptoffload.caam.recipes import hash as mdha

JR0 = regs.jr_base(0)


def _driver(queued: bool = False) -> tuple[Driver, CaamModel]:
    model = CaamModel("t2080", seed=b"device model tests", queued=queued)
    return Driver(ModelTransport(model), depth=16), model


def _submit(driver: Driver, data: bytes):
    return driver.submit_many([mdha.prepare_digest(driver, "sha256", data).request()])[0]


def test_queued_jobs_wait_until_taken_run_and_finished_by_the_caller():
    driver, model = _driver(queued=True)
    job = _submit(driver, b"abc")
    assert model.read32(JR0 + regs.IRSAR) == 15 and not job.done
    desc = model.take_job(0)
    assert desc is not None and model.take_job(0) is None
    assert model.read32(JR0 + regs.IRSAR) == 16  # the slot is free once a DECO took it
    model.finish_job(0, desc, model.execute(desc))
    assert model.read32(JR0 + regs.ORSFR) == 1
    assert job.wait() == 0 and job.outputs[0] == hashlib.sha256(b"abc").digest()


def test_take_job_leaves_room_in_the_output_ring_for_jobs_already_taken():
    driver, model = _driver(queued=True)
    for i in range(3):
        _submit(driver, bytes([i]))
    assert model.take_job(0, in_decos=16) is None  # 16 in DECOs fill a 16-entry output ring
    assert model.take_job(0, in_decos=15) is not None


def test_in_process_model_still_runs_jobs_inside_the_irjar_write():
    driver, model = _driver()
    job = _submit(driver, b"abc")
    assert model.read32(JR0 + regs.ORSFR) == 1 and not job.done  # ran, not yet reaped


def test_coalescing_raises_jri_at_the_descriptor_count():
    driver, model = _driver()
    model.write32(JR0 + regs.JRCFGR_LS, regs.JRCFGR_ICEN | 3 << 8 | 0xFFFF << 16)
    for i in range(2):
        _submit(driver, bytes([i]))
        assert not model.read32(JR0 + regs.JRINTR) & regs.JRINTR_JRI
    _submit(driver, b"third")
    assert model.read32(JR0 + regs.JRINTR) & regs.JRINTR_JRI
    assert model.interrupt(0)


def test_coalescing_raises_jri_when_the_timer_runs_out():
    driver, model = _driver()
    model.write32(JR0 + regs.JRCFGR_LS, regs.JRCFGR_ICEN | 255 << 8 | 50_000 << 16)  # 50 ms
    _submit(driver, b"one")
    assert not model.read32(JR0 + regs.JRINTR) & regs.JRINTR_JRI
    time.sleep(0.06)
    model.tick()
    assert model.read32(JR0 + regs.JRINTR) & regs.JRINTR_JRI


def test_without_coalescing_each_completion_raises_jri_and_imsk_masks_the_line():
    driver, model = _driver()
    model.write32(JR0 + regs.JRCFGR_LS, 0)
    _submit(driver, b"x")
    assert model.read32(JR0 + regs.JRINTR) & regs.JRINTR_JRI and model.interrupt(0)
    model.write32(JR0 + regs.JRCFGR_LS, regs.JRCFGR_IMSK)
    assert not model.interrupt(0)


def test_decos_complete_a_short_job_before_a_long_one_started_earlier():
    timing = Timing(latency=1e-6, throughput=1e6)
    decos = Decos(2)
    now = 0.0
    decos.hold(decos.free(now), now + timing.duration(10_000), 0, 0x100, 0)
    decos.hold(decos.free(now), now + timing.duration(10), 0, 0x200, 0)
    assert decos.free(now) is None  # both DECOs busy
    assert [d for _, d, _ in decos.due(1.0)] == [0x200, 0x100]
    assert timing.duration(1_000_000) == 1.000001
