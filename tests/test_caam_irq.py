"""The interrupt line over a fd (UIO's protocol), against a socket pair standing in for the
device: a fired interrupt is read once, re-enabling writes a 1, the fd's end is IrqGone."""

from __future__ import annotations

import os
import socket
import struct
import time

import pytest

from cryptoffload.caam.jr.irq import Irq, IrqGone, nudge
from cryptoffload.caam.jr.jobs import DeviceLost


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    irq = Irq(ours.detach(), name="test irq")
    yield irq, theirs
    irq.close()
    theirs.close()


def test_wait_times_out_when_nothing_fired(pair):
    irq, _ = pair
    assert irq.wait(0.01) is False


def test_a_fired_interrupt_is_read_once_with_its_count(pair):
    irq, device = pair
    device.send(struct.pack("=I", 7))
    assert irq.wait(1.0) is True and irq.count == 7
    assert irq.wait(0) is False  # consumed: another thread's wait finds nothing


@pytest.fixture
def wake():
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    yield r, w
    os.close(r)
    os.close(w)


def test_a_nudge_ends_the_wait_early_without_an_interrupt_and_is_drained(pair, wake):
    irq, _ = pair
    r, w = wake
    nudge(w)
    nudge(w)
    start = time.monotonic()
    assert irq.wait(5.0, r) is False
    assert time.monotonic() - start < 2.0
    with pytest.raises(BlockingIOError):
        os.read(r, 1)  # both nudges drained: the next wait sleeps again


def test_an_interrupt_with_a_nudge_is_still_read_as_fired(pair, wake):
    irq, device = pair
    r, w = wake
    nudge(w)
    device.send(struct.pack("=I", 3))
    time.sleep(0.01)
    assert irq.wait(1.0, r) is True and irq.count == 3


def test_enable_writes_a_four_byte_one(pair):
    irq, device = pair
    irq.enable()
    assert struct.unpack("=I", device.recv(16)) == (1,)


def test_the_other_end_closing_is_irq_gone_a_lost_device(pair):
    irq, device = pair
    device.close()
    with pytest.raises(IrqGone) as caught:
        irq.wait(1.0)
    assert isinstance(caught.value, DeviceLost)


def test_close_is_idempotent_and_fileno_is_the_fd():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    irq = Irq(ours.detach())
    assert irq.fileno() >= 0
    irq.close()
    irq.close()
    assert irq.fileno() == -1
    theirs.close()
