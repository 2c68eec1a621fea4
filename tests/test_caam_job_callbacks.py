"""The CAAM driver's job callbacks: run once, after the reap, outside the driver's lock, on
completion, on a reset and from a wait."""

from __future__ import annotations

import threading

import pytest

from cryptoffload.caam.jr.driver import Driver
from cryptoffload.caam.jr.jobs import CaamError
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.recipes import hash as caam_hash


@pytest.fixture
def driver():
    transport = ModelTransport.for_part("t2080")
    d = Driver(transport)
    yield d, transport.model
    d.close()


def submit_digest(d: Driver, data: bytes = b"abc"):
    prepared = caam_hash.prepare_digest(d, "sha256", data)
    b = prepared.buffers
    return d.submit(prepared.words, owned=b.owned, collect=b.collect)


def test_a_jobs_callback_runs_once_after_the_reap_outside_the_lock(driver):
    d, model = driver
    model.stall()
    job = submit_digest(d)
    calls = []

    def callback(j):
        calls.append((j is job, j.status, d._lock.locked(), threading.get_ident()))

    job.add_done_callback(callback)
    assert d.poll() == 0 and calls == []
    model.unstall()
    d.poll()
    assert calls == [(True, 0, False, threading.get_ident())]
    assert job.callbacks is None  # dropped once run
    d.poll()
    assert len(calls) == 1
    job.add_done_callback(callback)  # already done: at once
    assert len(calls) == 2


def test_a_wait_runs_the_callbacks_of_jobs_it_reaped(driver):
    d, _ = driver
    jobs = [submit_digest(d, bytes([i])) for i in range(5)]
    seen = []
    for job in jobs:
        job.add_done_callback(lambda j: seen.append(j))
    jobs[-1].wait()
    assert sorted(map(id, seen)) == sorted(map(id, jobs))


def test_jobs_failed_by_a_reset_call_back_with_their_error(driver):
    d, model = driver
    model.stall()
    job = submit_digest(d)
    errors = []
    job.add_done_callback(lambda j: errors.append(j.error))
    d.close()
    assert len(errors) == 1 and isinstance(errors[0], CaamError)
