"""The driver's side of the device file: the board's RegisterMap with posted writes.

Plain shared memory has no write side effects, CAAM registers do (IRJAR adds jobs, ORJRR
removes completions, JRINTR is write-1-to-clear, JRCR resets). So each register write is
posted: an (offset, value) record in the control page's queue, in order, that the device
applies through the model's own ``write32``; a read first waits until every write posted
before it is applied (as a PCIe or CoreNet read flushes posted writes), then loads the register
page the device keeps mirrored. Everything else (the mapping, the volatile 32-bit loads, the
byte order, the pool) is the board's code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from cryptoffload.caam.device.layout import QUEUE_RECORDS, Control
from cryptoffload.caam.jr.boards import RegisterMap, _Mapping
from cryptoffload.caam.jr.jobs import DeviceLost

__all__ = ["DeviceGone", "PostedRegisterMap"]


class DeviceGone(DeviceLost):
    """The device process stopped answering (it exited, or was killed)."""


class PostedRegisterMap(RegisterMap):
    """A RegisterMap whose writes are posted to the device and whose reads flush them.

    ``bell()`` wakes the device when it sleeps; ``alive()`` says whether it still runs (asked
    while a read waits); a read that waits ``timeout`` seconds gives up: DeviceGone, then on
    every access.
    """

    def __init__(
        self,
        mapping: _Mapping,
        control: Control,
        *,
        name: str,
        byteorder: str,
        bell: Callable[[], None],
        alive: Callable[[], bool],
        timeout: float = 5.0,
    ) -> None:
        super().__init__(mapping, name=name, byteorder=byteorder)
        self._load = self.__dict__.get("read32", super().read32)
        self.read32 = self._read  # type: ignore[method-assign]
        self.write32 = self._post  # type: ignore[method-assign]
        self.control = control
        self._words, self._queue = control.words, control.queue
        self._bell, self._alive, self._timeout = bell, alive, timeout
        self._lock = threading.Lock()
        self._posted = control.words[Control.POSTED]
        self.gone: str | None = None

    def _post(self, offset: int, value: int) -> None:
        rel = offset - self.start
        if rel & 3 or not 0 <= rel < self.size:
            raise self._bad(offset)
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"register value must fit in 32 bits, got {value:#x}")
        if self.gone is not None:
            raise DeviceGone(self.gone)
        words = self._words
        with self._lock:
            n = self._posted
            if n - words[Control.APPLIED] >= QUEUE_RECORDS:
                self._flush(n - QUEUE_RECORDS + 1)
            i = (n % QUEUE_RECORDS) * 2
            self._queue[i] = offset
            self._queue[i + 1] = value
            self._posted = n + 1
            words[Control.POSTED] = n + 1
        if words[Control.SLEEPING]:
            self._bell()

    def _read(self, offset: int) -> int:
        n = self._posted
        if self._words[Control.APPLIED] < n:
            self._flush(n)
        elif self.gone is not None:
            raise DeviceGone(self.gone)
        return self._load(offset)

    def _flush(self, n: int) -> None:
        """Wait until the device applied ``n`` writes: a short spin, then sleeps doubling from
        10 us to 1 ms (a device busy with a job applies them after it, a few ms at most)."""
        words = self._words
        spins = sleeps = 0
        deadline = 0.0
        while words[Control.APPLIED] < n:
            if self.gone is not None:
                raise DeviceGone(self.gone)
            spins += 1
            if spins < 64:
                continue
            if words[Control.SLEEPING]:
                self._bell()
            now = time.monotonic()
            if not deadline:
                deadline = now + self._timeout
            elif sleeps & 15 == 15 and not self._alive():
                self.gone = f"{self.name}: the device process exited"
            elif now > deadline:
                self.gone = f"{self.name}: the device did not answer in {self._timeout} s"
            time.sleep(min(1e-3, 1e-5 * (1 << min(sleeps, 7))))
            sleeps += 1

    def close(self) -> None:
        self.control.release()
        super().close()
