"""Jobs in flight on the driver's ring: placed, reaped, waited for, failed after a reset."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

from cryptoffload.caam import regs
from cryptoffload.caam.desc.encoding import HDR_SHARED
from cryptoffload.caam.jr.irq import nudge
from cryptoffload.caam.jr.jobs import (
    FLUSHED,
    CaamError,
    CaamUnavailable,
    DeviceLost,
    Job,
    RingFull,
    RingTimeout,
    SharedCache,
    Tally,
)
from cryptoffload.caam.jr.ring import DESC_BYTES, JobRing, RingStuck

__all__ = ["RING_ERRORS", "InFlight"]

log = logging.getLogger("cryptoffload")

_JOB_HEADER = 0x16  # HEADER command, bits 31:27
#: Zeros written over a region before it is freed (in pieces of this size, no allocation):
#: a job's regions hold plaintext, key parts (RSA d, p, q...) and results, and a board's DMA
#: pool is physical memory that outlives the process.
_ZERO_CHUNK = 64 * 1024
_ZEROS = memoryview(bytes(_ZERO_CHUNK))


def wipe(transport: Any, phys: int, size: int) -> None:
    """Overwrite ``size`` bytes of DMA memory at ``phys`` with zeros."""
    write, chunk = transport.write, len(_ZEROS)
    while size > chunk:
        write(phys, _ZEROS)
        phys += chunk
        size -= chunk
    if size > 0:
        write(phys, _ZEROS[:size])


#: JRINTR error types, as Linux's regs.h names them.
RING_ERRORS = {
    regs.JR_ERR_WRITE: "write error",
    regs.JR_ERR_BAD_INPADDR: "bad input ring address",
    regs.JR_ERR_BAD_OUTADDR: "bad output ring address",
    regs.JR_ERR_INV_INPWRT: "invalid input ring write",
    regs.JR_ERR_INV_OUTWRT: "invalid output ring write",
    regs.JR_ERR_RESET: "reset while busy",
    regs.JR_ERR_REMOVE_OFL: "more jobs removed than completed",
    regs.JR_ERR_ADD_OFL: "more jobs added than slots",
}


class InFlight:
    """The half of the driver that holds its lock: jobs placed on the ring, completions reaped
    and matched by descriptor address, waits (one thread polls, the others sleep on the
    condition), and the reset after a stall or a ring error. ``Driver.__init__`` sets the state.
    """

    name: str
    timeout: float
    transport: Any
    long_pointers: bool
    _lock: threading.Lock
    _cond: threading.Condition
    _ring: JobRing
    _depth: int
    _in_flight: dict[int, Job]
    _shared: SharedCache
    _separate: bool
    _regions: dict[int, int]
    _bytes_out: Tally
    _wiped: Tally
    _polling: bool
    _waiters: int
    _broken: str | None
    _closed: bool
    _jobs: int
    _words: int
    _max_in_flight: int
    _counts: Counter[str]
    _errors: Counter[int]
    _irq: Any
    #: With an interrupt: a pipe (read end, write end) by which a thread that reaped jobs wakes
    #: the one sleeping on the interrupt.
    _wake: tuple[int, int] | None
    #: Jobs done under the lock whose callbacks have yet to run (see ``_run_callbacks``).
    _called_back: deque[Job]

    def poll(self) -> int:
        """Reap whatever has completed, without waiting; how many jobs were reaped. The done
        callbacks of the jobs reaped run before it returns."""
        with self._lock:
            n = self._reap()
        if self._called_back:
            self._run_callbacks()
        return n

    def _run_callbacks(self) -> None:
        """Run the callbacks of jobs done so far (lock not held): each job's once, by whichever
        thread takes it from the queue; a callback that raises is logged, the others run."""
        queue = self._called_back
        while queue:
            try:
                job = queue.popleft()
            except IndexError:  # another thread took the last one
                return
            callbacks, job.callbacks = job.callbacks, None
            for fn in callbacks or ():
                try:
                    fn(job)
                except Exception:
                    log.exception("%s: a job's done callback raised", self.name)

    def _wipe_free(self, phys: int, size: int) -> None:
        """Overwrite a region that may hold a key, then free it."""
        wipe(self.transport, phys, size)
        self._wiped.append(size)
        self._regions.pop(phys, None)
        self.transport.free(phys)

    def _enqueue(
        self, jobs: list[Job], words: list[Sequence[int]], datas: list[bytes]
    ) -> tuple[int, BaseException | None]:
        done, n = 0, len(jobs)
        deadline = 0.0
        spins = 0
        with self._lock:
            try:
                while done < n:
                    if self._broken is not None or self._closed:
                        return done, CaamUnavailable(self._broken or f"{self.name}: driver closed")
                    room = self._depth - len(self._in_flight)
                    if room:
                        room = min(room, self._ring.room())
                    if room:
                        end = min(done + room, n)
                        self._place(jobs, words, datas, done, end)
                        done = end
                        continue
                    if not self._in_flight:
                        self._counts["ring_full"] += n - done
                        return done, RingFull(f"{self.name}: job ring {self._ring.index} is full")
                    if not deadline:
                        deadline = time.monotonic() + self.timeout
                    elif time.monotonic() > deadline:
                        self._counts["ring_full"] += n - done
                        return done, RingFull(
                            f"{self.name}: job ring {self._ring.index} stayed full {self.timeout} s"
                        )
                    spins = self._step(spins, deadline)
            except DeviceLost as exc:
                return done, self._lost(exc)
        return done, None

    def _place_one(self, job: Job, w: Sequence[int], data: bytes) -> None:
        """``_place`` for one job (lock held)."""
        if self._separate:
            desc = self.transport.alloc(len(data), 64)
        else:
            desc = self._ring.free_slots.pop()
        self.transport.write(desc, data)
        job.desc = desc
        in_flight = self._in_flight
        in_flight[desc] = job
        first = w[0]
        if first & HDR_SHARED and first >> 27 == _JOB_HEADER:
            shared = self._shared.by_phys
            if shared:
                self._use_shared(job, w)
        self._ring.add_one(desc)
        self._jobs += 1
        self._words += len(w)
        if len(in_flight) > self._max_in_flight:
            self._max_in_flight = len(in_flight)

    def _use_shared(self, job: Job, w: Sequence[int]) -> None:
        if len(w) < (3 if self.long_pointers else 2):
            return
        entry = self._shared.by_phys.get((w[1] << 32 | w[2]) if self.long_pointers else w[1])
        if entry is not None:
            if entry.pins:
                entry.pins -= 1
            entry.refs += 1
            job.shared = entry

    def _place(
        self,
        jobs: list[Job],
        words: list[Sequence[int]],
        datas: list[bytes],
        start: int,
        end: int,
    ) -> None:
        ring, write, in_flight = self._ring, self.transport.write, self._in_flight
        slots = ring.free_slots
        shared = self._shared.by_phys
        descs = []
        count = 0
        for i in range(start, end):
            job = jobs[i]
            desc = self.transport.alloc(len(datas[i]), 64) if self._separate else slots.pop()
            write(desc, datas[i])
            job.desc = desc
            in_flight[desc] = job
            descs.append(desc)
            w = words[i]
            count += len(w)
            if shared and w[0] & HDR_SHARED and w[0] >> 27 == _JOB_HEADER:
                self._use_shared(job, w)
        ring.add(descs)
        self._jobs += end - start
        self._words += count
        if len(in_flight) > self._max_in_flight:
            self._max_in_flight = len(in_flight)

    def _reap(self) -> int:
        """Every completion in the output ring handed to its job (lock held)."""
        done = self._ring.take()
        if not done:
            return 0
        in_flight, slots = self._in_flight, self._ring.free_slots
        transport = self.transport
        regions, free, read, write = self._regions, transport.free, transport.read, transport.write
        zeros = _ZEROS
        moved = wiped = 0
        for desc, word in done:
            job = in_flight.pop(desc, None)
            if job is None:
                self._counts["stray_completions"] += 1
                continue
            entry = job.shared
            if word or (entry is not None and entry.retired):
                self._finish(job, word, None)
                continue
            if self._separate:
                free(desc)
            else:  # the common case, inline: status 0, shared descriptor kept
                slots.append(desc)
            if entry is not None:
                entry.refs -= 1
            for phys, out in job.collect:
                if out.__class__ is int:
                    job.outputs.append(read(phys, out) if out else b"")
                    moved += out
                else:
                    self.transport.read_into(phys, out)
                    job.outputs.append(out)
                    moved += len(out)
            for phys in job.owned:
                size = regions.pop(phys, 0)
                if size <= _ZERO_CHUNK:  # the common case, inline
                    write(phys, zeros[:size])
                else:
                    wipe(transport, phys, size)
                wiped += size
                free(phys)
            job.owned = ()
            job.status = 0
            if job.callbacks:
                self._called_back.append(job)
        tally = self._bytes_out
        tally.append(moved)
        if len(tally) > tally.FOLD_AT:
            tally.total()
        if wiped:
            tally = self._wiped
            tally.append(wiped)
            if len(tally) > tally.FOLD_AT:
                tally.total()
        if self._waiters:
            self._cond.notify_all()
        if self._polling and self._wake is not None:
            # Another thread (an event loop's service) took the interrupt the one sleeping on
            # it waits for: wake it, its job may be among these.
            nudge(self._wake[1])
        return len(done)

    def _finish(self, job: Job, word: int, error: BaseException | None) -> None:
        """A job done, lock held: its slot back, outputs collected (status 0 only), its regions
        freed (wiped first after an error), its shared descriptor released."""
        if self._separate:
            self.transport.free(job.desc)
        else:
            self._ring.free_slots.append(job.desc)
        if word:
            self._errors[word] += 1
        elif job.collect:
            outs, transport = job.outputs, self.transport
            for phys, out in job.collect:
                if isinstance(out, int):
                    outs.append(transport.read(phys, out) if out else b"")
                    self._bytes_out.append(out)
                else:
                    transport.read_into(phys, out)
                    outs.append(out)
                    self._bytes_out.append(len(out))
        if job.owned:
            self._release(job)
        if job.shared is not None:
            entry = job.shared
            entry.refs -= 1
            if entry.retired and entry.idle:
                self._shared.forget(entry)
                self._wipe_free(entry.phys, entry.size)
        if error is None:
            job.status = word
        else:
            job.error = error
        if job.callbacks:
            self._called_back.append(job)

    def _release(self, job: Job) -> None:
        """A job's regions wiped and freed (whatever its status: they held its data)."""
        regions, transport = self._regions, self.transport
        for phys in job.owned:
            size = regions.pop(phys, 0)
            if size:
                wipe(transport, phys, size)
                self._wiped.append(size)
            transport.free(phys)
        job.owned = ()

    def _wait(self, job: Job, timeout: float | None) -> None:
        with self._lock:
            try:
                if job.status is None and job.error is None and self._irq is None:
                    self._reap()  # with an interrupt, completions are reaped when it fires
                if job.status is None and job.error is None:
                    self._wait_long(job, self.timeout if timeout is None else timeout)
            except DeviceLost as exc:
                lost: DeviceLost | None = self._lost(exc)
            else:
                lost = None
        if self._called_back:
            self._run_callbacks()
        if lost is not None:
            raise lost

    def _lost(self, exc: DeviceLost) -> DeviceLost:
        """The device stopped answering (lock held): the driver breaks, every job fails."""
        if self._broken is None:
            self._counts["device_lost"] += 1
            self._break(str(exc))
        return DeviceLost(self._broken or str(exc))

    def _wait_long(self, job: Job, limit: float) -> None:
        deadline = time.monotonic() + limit
        spins = 0
        while job.status is None and job.error is None:
            if time.monotonic() > deadline:
                self._recover(f"job at 0x{job.desc:x} not back after {limit} s", job)
                return
            spins = self._step(spins, deadline)

    def _ring_error(self) -> bool:
        """A ring error (JRINTR.ERR) reset away, lock held; False when there is none."""
        intr = self._ring.interrupt_status()
        if not intr & regs.JRINTR_ERR:
            return False
        kind = (intr & regs.JRINTR_ERR_TYPE_MASK) >> regs.JRINTR_ERR_TYPE_SHIFT
        self._counts["ring_errors"] += 1
        what = RING_ERRORS.get(kind, "unknown")
        self._recover(f"ring error type {kind}, {what} (JRINTR 0x{intr:08x})", None)
        return True

    def _on_interrupt(self) -> int:
        """The interrupt fired (lock held): a ring error reset away, or JRI cleared (write 1)
        and the completions reaped; then the line enabled again. How many jobs were reaped."""
        self._counts["interrupts"] += 1
        reaped = 0
        if not self._ring_error():
            self._ring.write(regs.JRINTR, regs.JRINTR_JRI)
            reaped = self._reap()
        self._irq.enable()
        return reaped

    def _step(self, spins: int, deadline: float = 0.0) -> int:
        """One turn of waiting, lock held: reap; else look for a ring error; else back off with
        the lock released (one thread polls or sleeps on the interrupt, the others sleep on the
        condition)."""
        if self._polling:
            self._waiters += 1
            try:
                self._cond.wait(0.002 if self._irq is None else 0.05)
            finally:
                self._waiters -= 1
            return spins
        if self._irq is not None:
            return self._step_irq(spins, deadline)
        if self._reap():
            return 0
        if self._in_flight and self._ring_error():
            return 0
        self._polling = True
        self._lock.release()
        try:
            if self._called_back:  # jobs reaped for others: their callbacks need not wait
                self._run_callbacks()
            time.sleep(0 if spins < 8 else min(1e-3, 2e-6 * (1 << min(spins - 8, 10))))
        finally:
            self._lock.acquire()
            self._polling = False
        return spins + 1

    def _step_irq(self, spins: int, deadline: float) -> int:
        """Sleep on the interrupt (lock released) up to ``deadline``, then handle it."""
        self._polling = True
        self._lock.release()
        try:
            if self._called_back:  # jobs reaped for others: their callbacks need not wait
                self._run_callbacks()
            left = deadline - time.monotonic() if deadline else 0.05
            wake = self._wake[0] if self._wake is not None else None
            fired = self._irq.wait(max(0.0, min(left, 0.25)), wake)
        finally:
            self._lock.acquire()
            self._polling = False
        if fired:
            self._on_interrupt()
            return 0
        # No interrupt in a quarter second (or the deadline): look, in case one was lost.
        if self._reap() or (self._in_flight and self._ring_error()):
            return 0
        return spins + 1

    def _recover(self, reason: str, culprit: Job | None) -> None:
        """Reset and re-arm the ring, lock held: completions that made it keep their status; every
        other job in flight fails (RingTimeout for ``culprit``, CaamError for the rest)."""
        self._counts["ring_resets"] += 1
        self._reap()
        ring = self._ring
        try:
            ring.halt(self.timeout)
            flushed = ring.take()
        except RingStuck as exc:
            self._break(f"{reason}; then {exc}")
            return
        for desc, word in flushed:
            job = self._in_flight.pop(desc, None)
            if job is None:
                continue
            if word == FLUSHED:
                self._fail(job, word, reason, culprit)
            else:
                self._finish(job, word, None)
        try:
            ring.finish_reset(self.timeout)
        except RingStuck as exc:
            self._break(f"{reason}; then {exc}")
            return
        for job in list(self._in_flight.values()):
            self._fail(job, FLUSHED, reason, culprit)
        self._in_flight.clear()
        ring.free_slots[:] = [ring.slots + i * DESC_BYTES for i in range(ring.depth - 1, -1, -1)]
        self._cond.notify_all()

    def _fail(self, job: Job, word: int, reason: str, culprit: Job | None) -> None:
        kind = RingTimeout if job is culprit else CaamError
        if job is culprit:
            self._counts["timeouts"] += 1
        self._finish(job, word, kind(word, f"{self.name}: {reason}; the ring was reset"))

    def _break(self, reason: str) -> None:
        """The ring will not reset: fail every job in flight, keep their memory (the block may
        still write it), refuse new jobs."""
        self._broken = f"{self.name}: {reason}"
        for job in self._in_flight.values():
            self._errors[FLUSHED] += 1
            job.error = CaamError(FLUSHED, self._broken)
            if job.callbacks:
                self._called_back.append(job)
        self._in_flight.clear()
        self._cond.notify_all()
