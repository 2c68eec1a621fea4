"""The device process's loop: posted register writes applied in order, jobs run on timed DECOs,
completions posted, the interrupt line signalled, the register page mirrored.

The mirror: after every change the device copies the registers that change (each ring's
IRBAR/ORBAR/sizes, IRSAR, ORSFR, JRSTAR, JRINTR, JRCFGR, IRRIR, ORWIR, JRCR; MCFGR, SCFGR,
DECORR/DECORSR, the TRNG registers and RDSTA; DECO 0's control, status and descriptor buffer)
into the register page, in the part's byte order; the ID/version registers once at start. The
page is refreshed before ``applied`` is published, so a driver read that waited for its writes
sees their effect. A ring told to halt gets the jobs its DECOs hold back first (a reset waits
for the DECOs), so the halt shows done only once they are in the output ring.

Figures (the control page): jobs, bytes read, the modelled DECO time, the model's compute, the
time a DECO was busy, interrupts, wakeups, and ``work``: the time of loop turns that did
something (the model plus this process's bus emulation: what the device process can sustain).

Idle: the loop spins while work is recent or due soon, then sets ``sleeping`` and waits on the
irq socket (which the driver side pokes when it sees the flag; a missed poke costs at most
``IDLE_WAIT``). It exits when the irq socket closes, when its parent changes, on SIGTERM.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import select
import socket
import struct
import sys
import time
from collections.abc import Iterable

from cryptoffload.caam import regs, status
from cryptoffload.caam.device.layout import CONTROL_SIZE, QUEUE_RECORDS, Control, Layout
from cryptoffload.caam.device.memory import PoolMemory
from cryptoffload.caam.device.timing import DEFAULT_TIMING, Decos, Timing
from cryptoffload.caam.model.core import CaamModel

__all__ = ["FAULTS", "Device"]

#: Faults a test can ask for: "hang" (jobs are taken and never completed, no interrupt, until
#: a ring reset flushes them), "noirq" (jobs complete, the interrupt line never rises).
FAULTS = ("hang", "noirq")
FLUSHED = status.deco(status.DECO_JRRESET)
SPIN = 200e-6  # seconds of spinning after the last activity
IDLE_WAIT = 0.02  # seconds asleep before looking at the parent again
_RING_REGS = (
    regs.IRBAR_HI,
    regs.IRBAR_LO,
    regs.IRSR,
    regs.IRSAR,
    regs.ORBAR_HI,
    regs.ORBAR_LO,
    regs.ORSR,
    regs.ORSFR,
    regs.JRSTAR,
    regs.JRINTR,
    regs.JRCFGR_MS,
    regs.JRCFGR_LS,
    regs.IRRIR,
    regs.ORWIR,
    regs.JRCR,
)
_CTRL_REGS = (
    regs.MCFGR,
    regs.SCFGR,
    regs.DECORSR,
    regs.DECORR,
    regs.RDSTA,
    *range(regs.RTMCTL, regs.RTSCRL[-1] + 4, 4),
)
_DECO = regs.DECO_PAGE * regs.PAGE_SIZE
_DECO_REGS = (
    *range(_DECO + regs.DECO_JR_CTL_HI, _DECO + regs.DECO_OP_STATUS_LO + 4, 4),
    *range(_DECO + regs.DECO_DESCBUF, _DECO + regs.DECO_DESCBUF + 4 * regs.DECO_DESCBUF_WORDS, 4),
    _DECO + regs.DECO_DESC_DBG,
    _DECO + regs.DECO_DBG_EXEC,
)


def _map(fd: int, offset: int, size: int) -> tuple[mmap.mmap, memoryview]:
    page = mmap.ALLOCATIONGRANULARITY
    low = offset - offset % page
    length = -(-(offset - low + size) // page) * page
    mm = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, 0, low)
    return mm, memoryview(mm)[offset - low : offset - low + size]


class Device:
    """The model of ``layout.part`` over the device file at ``path``, signalling on ``irq``."""

    def __init__(
        self,
        path: str,
        layout: Layout,
        irq: socket.socket,
        *,
        timing: Timing = DEFAULT_TIMING,
        ring: int = 0,
        faults: Iterable[str] = (),
        parent: int | None = None,
    ) -> None:
        self.layout, self.irq, self.timing, self.ring = layout, irq, timing, ring
        self.faults = frozenset(faults)
        self.parent = parent
        fd = os.open(path, os.O_RDWR)
        try:
            origin = layout.origin
            self._maps = [
                _map(fd, layout.registers - origin, regs.BLOCK_SIZE),
                _map(fd, layout.control - origin, CONTROL_SIZE),
                _map(fd, layout.pool - origin, layout.pool_size),
            ]
        finally:
            os.close(fd)
        self.page = self._maps[0][1].cast("I")
        self.control = Control(self._maps[1][1])
        self.pool = PoolMemory(self._maps[2][1], layout.pool)
        self.model = CaamModel(layout.part, queued=True, memory=self.pool)
        self.rings = self.model.part.job_rings
        self.decos = Decos(self.model.part.decos)
        self._swap = layout.byteorder != sys.byteorder
        self._dirty: set[int] = set()  # register offsets to mirror
        self._applied = 0
        self._irq_on = True
        self._interrupts = 0
        self._busy_until = 0.0
        self._figures = dict.fromkeys(Control.FIGURES, 0)
        self._coalescing = False
        self.stop = False

    # The register page -------------------------------------------------------------------

    def _put(self, offset: int, value: int) -> None:
        if self._swap:
            value = int.from_bytes(value.to_bytes(4, "little"), "big")
        self.page[offset >> 2] = value

    def _mirror(self, offsets: Iterable[int]) -> None:
        read = self.model.read32
        for offset in offsets:
            self._put(offset, read(offset))

    def mirror_all(self) -> None:
        """Every register the page shows, the static ID/version registers included."""
        for page in range(self.rings + 1):
            base = page * regs.PAGE_SIZE
            self._mirror(range(base + regs.ID_SPACE_START, base + regs.PAGE_SIZE, 4))
        self._mirror(_CTRL_REGS)
        self._mirror(_DECO_REGS)
        for ring in range(self.rings):
            self._mirror_ring(ring)

    def _mirror_ring(self, ring: int) -> None:
        base = regs.jr_base(ring)
        read = self.model.read32
        for _ in range(4):  # until reads with side effects (halt done, reset done) settle
            before = (read(base + regs.JRINTR), read(base + regs.JRCR))
            self._mirror(base + reg for reg in _RING_REGS)
            if (read(base + regs.JRINTR), read(base + regs.JRCR)) == before:
                break

    def _refresh(self) -> None:
        dirty, self._dirty = self._dirty, set()
        rings = {o // regs.PAGE_SIZE - 1 for o in dirty if 0 < o // regs.PAGE_SIZE <= self.rings}
        if any(o < regs.PAGE_SIZE for o in dirty):
            self._mirror(_CTRL_REGS)
            self._mirror(o for o in dirty if o < regs.PAGE_SIZE)
            self._mirror(_DECO_REGS)  # DECORR hands DECO 0 over
            rings = set(range(self.rings))  # a software reset touches every ring
        if any(o // regs.PAGE_SIZE == regs.DECO_PAGE for o in dirty):
            self._mirror(_DECO_REGS)
            self._mirror(_CTRL_REGS)
        for ring in rings:
            self._mirror_ring(ring)

    # Posted writes ------------------------------------------------------------------------

    def apply(self) -> int:
        """Apply every posted write in order; publish ``applied`` once the page shows them."""
        words, queue = self.control.words, self.control.queue
        posted = words[Control.POSTED]
        applied = self._applied
        if applied == posted:
            return 0
        write, dirty = self.model.write32, self._dirty
        while applied < posted:
            i = (applied % QUEUE_RECORDS) * 2
            offset, value = queue[i], queue[i + 1]
            with contextlib.suppress(ValueError):  # outside the block: the bus drops it
                write(offset, value)
            dirty.add(offset)
            if offset % regs.PAGE_SIZE == regs.JRCFGR_LS and value & regs.JRCFGR_ICEN:
                self._coalescing = True
            applied += 1
        for ring in range(self.rings):
            if self.model.halting(ring):
                self._give_back(ring)
        self._refresh()
        n = applied - self._applied
        self._applied = applied
        words[Control.APPLIED] = applied
        return n

    def _give_back(self, ring: int) -> None:
        """A halting ring's jobs held by DECOs, completed now (flushed if they hung)."""
        for desc, word in self.decos.drop_ring(ring):
            self.model.finish_job(ring, desc, FLUSHED if "hang" in self.faults else word)
            self._dirty.add(regs.jr_base(ring) + regs.ORSFR)

    # Jobs ---------------------------------------------------------------------------------

    def start_jobs(self, now: float) -> int:
        """One job from each ring with work onto a free DECO; how many started."""
        started = 0
        for ring in range(self.rings):
            deco = self.decos.free(now)
            if deco is None:
                break
            desc = self.model.take_job(ring, self.decos.in_ring(ring))
            if desc is None:
                continue
            before = self.pool.bytes_read
            c0 = time.perf_counter()
            word = self.model.execute(desc)
            compute = time.perf_counter() - c0
            nbytes = self.pool.bytes_read - before
            modelled = self.timing.duration(nbytes)
            done_at = max(now + modelled, time.monotonic())
            if "hang" in self.faults:
                done_at = float("inf")
            self.decos.hold(deco, done_at, ring, desc, word)
            f = self._figures
            f["jobs"] += 1
            f["bytes"] += nbytes
            f["modelled_ns"] += int(modelled * 1e9)
            f["compute_ns"] += int(compute * 1e9)
            if not f["first_start_ns"]:
                f["first_start_ns"] = int(now * 1e9)
            if done_at != float("inf"):
                end = max(done_at, self._busy_until)
                f["busy_ns"] += int((end - max(now, self._busy_until)) * 1e9)
                self._busy_until = end
            self._dirty.add(regs.jr_base(ring) + regs.IRSAR)
            started += 1
        return started

    def finish_jobs(self, now: float) -> int:
        """Completions of the jobs whose time has come, posted to their output rings."""
        done = self.decos.due(now)
        for ring, desc, word in done:
            self.model.finish_job(ring, desc, word)
            self._dirty.add(regs.jr_base(ring) + regs.ORSFR)
        if done:
            self._figures["last_done_ns"] = int(now * 1e9)
        return len(done)

    def publish(self) -> None:
        """The figures into the control page."""
        words, at = self.control.words, Control.FIGURES_AT
        self._figures["interrupts"] = self._interrupts
        for i, name in enumerate(Control.FIGURES):
            words[at + i] = self._figures[name]

    # The interrupt line -------------------------------------------------------------------

    def _signal(self) -> None:
        if not self._irq_on or "noirq" in self.faults or not self.model.interrupt(self.ring):
            return
        self._interrupts += 1
        self._irq_on = False
        try:
            self.irq.send(struct.pack("=I", self._interrupts))
        except BlockingIOError:
            self._irq_on = True  # the driver has not read the last ones: try again later
        except OSError:
            self.stop = True

    def _messages(self) -> None:
        """The driver side's messages: 1 re-enables the interrupt line, 0 only wakes us."""
        while True:
            try:
                data = self.irq.recv(64, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno != errno.EINTR:
                    self.stop = True
                return
            if not data:
                self.stop = True  # the driver's end closed: nobody is left to serve
                return
            if len(data) >= 4 and struct.unpack_from("=I", data)[0]:
                self._irq_on = True

    # The loop -----------------------------------------------------------------------------

    def serve(self) -> None:
        """Run until stopped."""
        self.mirror_all()
        words = self.control.words
        words[Control.PID] = os.getpid()
        words[Control.READY] = 1
        last = time.monotonic()
        ring_regs = regs.jr_base(self.ring)
        while not self.stop:
            now = time.monotonic()
            work = self.apply()
            work += self.start_jobs(now)
            work += self.finish_jobs(now)
            if self._coalescing:
                self.model.tick(now)
                self._dirty.add(ring_regs + regs.JRINTR)
            if self._dirty:
                self._refresh()
            self._messages()
            self._signal()
            if work:
                self._figures["work_ns"] += int((time.monotonic() - now) * 1e9)
                self.publish()
                last = now
                continue
            due = self.decos.next_due()
            if due is not None and due - now < 100e-6:
                continue
            if now - last < SPIN:
                continue
            timeout = IDLE_WAIT if due is None else min(IDLE_WAIT, due - now - 50e-6)
            self._sleep(timeout)

    def _sleep(self, timeout: float) -> None:
        words = self.control.words
        words[Control.SLEEPING] = 1
        try:
            if words[Control.POSTED] != self._applied:
                return
            select.select([self.irq], [], [], max(timeout, 0.0))
            self._figures["wakeups"] += 1
        finally:
            words[Control.SLEEPING] = 0
        if self.parent is not None and os.getppid() != self.parent:
            self.stop = True

    def close(self) -> None:
        """Unmap the file."""
        self.control.release()
        self.page.release()
        self.pool.view.release()
        for mm, view in self._maps:
            view.release()
            mm.close()
