"""The posted-write queue between the driver's PostedRegisterMap and the device's loop, in one
process over a device file: a device that applies nothing until the writer waits for room, so
the queue fills, and every write must still be applied once, in order."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from cryptoffload.caam import regs
from cryptoffload.caam.device.layout import CONTROL_SIZE, QUEUE_RECORDS, Control, create, layout_for
from cryptoffload.caam.device.loop import Device
from cryptoffload.caam.device.posted import PostedRegisterMap
from cryptoffload.caam.jr.boards import Paths, _Mapping

REGISTER = regs.jr_base(0) + regs.IRBAR_LO


@dataclass
class PausedBus:
    """A device that applies posted writes only when the writer waits for it (``alive`` is
    what a waiting writer asks), and records each write it applies instead of acting on it."""

    device: Device
    registers: PostedRegisterMap
    control: Control
    applied: list[tuple[int, int]] = field(default_factory=list)
    #: POSTED and APPLIED each time the writer waited: the queue's state when it found it full.
    waits: list[tuple[int, int]] = field(default_factory=list)

    def wake(self) -> bool:
        words = self.control.words
        self.waits.append((words[Control.POSTED], words[Control.APPLIED]))
        self.device.apply()
        return True


def _mapping(path: str, offset: int, size: int) -> _Mapping:
    return _Mapping(
        path,
        offset,
        size,
        page_size=Paths().page_size,
        uncached=False,
        missing="the device file is gone",
        refused="check the device file",
    )


@pytest.fixture
def bus(tmp_path) -> Iterator[PausedBus]:
    layout = layout_for("t2080")
    path = str(tmp_path / "memory")
    create(path, layout)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    device = Device(path, layout, theirs)
    control_map = _mapping(path, layout.control - layout.origin, CONTROL_SIZE)
    control = Control(control_map.view)
    holder: list[PausedBus] = []
    registers = PostedRegisterMap(
        _mapping(path, layout.registers - layout.origin, regs.BLOCK_SIZE),
        control,
        name="paused device",
        byteorder=layout.byteorder,
        bell=lambda: None,
        alive=lambda: holder[0].wake(),
    )
    paused = PausedBus(device, registers, Control(control_map.view))
    holder.append(paused)
    device.model.write32 = lambda offset, value: paused.applied.append((offset, value))
    try:
        yield paused
    finally:
        registers.close()
        paused.control.release()
        control_map.close()
        device.close()
        ours.close()
        theirs.close()


@pytest.mark.parametrize("extra", [1, 2, QUEUE_RECORDS + 3])
def test_writes_beyond_a_full_queue_wait_and_are_all_applied_in_order(bus, extra):
    total = QUEUE_RECORDS + extra
    for value in range(total):
        bus.registers.write32(REGISTER, value)
    bus.registers.read32(REGISTER)  # a read flushes every write posted before it
    assert bus.applied == [(REGISTER, value) for value in range(total)]
    # The writer waited for room exactly when the queue held QUEUE_RECORDS unapplied writes.
    *for_room, _for_the_read = bus.waits
    assert for_room[0] == (QUEUE_RECORDS, 0)
    assert all(posted - applied == QUEUE_RECORDS for posted, applied in for_room)


def test_a_full_queue_is_applied_in_order_without_a_wait(bus):
    for value in range(QUEUE_RECORDS):
        bus.registers.write32(REGISTER, value)
    assert bus.waits == [] and bus.applied == []
    bus.device.apply()
    assert bus.applied == [(REGISTER, value) for value in range(QUEUE_RECORDS)]
