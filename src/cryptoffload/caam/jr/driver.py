"""The CAAM driver: one job ring over a transport, many jobs in flight, batches, RNG4 bring-up."""

from __future__ import annotations

import os
import struct
import threading
import weakref
from collections import Counter, deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from cryptoffload.caam import regs
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.jr import rngboot
from cryptoffload.caam.jr.inflight import InFlight, wipe
from cryptoffload.caam.jr.jobs import (
    FLUSHED,
    CaamError,
    CaamUnavailable,
    DeviceLost,
    Job,
    Out,
    Request,
    RingFull,
    RingTimeout,
    SharedCache,
    SharedEntry,
    Tally,
    check,
)
from cryptoffload.caam.jr.ring import DESC_BYTES, JobRing, RingStuck
from cryptoffload.caam.jr.rngboot import RNG_INSTANTIATE, RNG_INSTANTIATE_NO_SK

__all__ = [
    "PKHA_BITS",
    "RNG_ENTROPY_DELAYS",
    "RNG_INSTANTIATE",
    "RNG_INSTANTIATE_NO_SK",
    "CaamError",
    "CaamUnavailable",
    "Driver",
    "Job",
    "Request",
    "RingFull",
    "RingTimeout",
    "check",
]

RNG_ENTROPY_DELAYS = rngboot.ENTROPY_DELAYS
#: Every PKHA the public sources describe holds 4096-bit operands; no register gives the size.
PKHA_BITS = 4096
_FOUR_GIB = 1 << 32


class Driver(InFlight):
    """Job ring ``ring`` of the block behind ``transport``, shared by every thread of the process.

    Found at run time: era, CHAs and counts, GCM, byte order (CSTA), pointer size (CTPR_MS.PS and
    MCFGR; ``long_pointers`` True or False sets MCFGR, block-wide). Jobs are polled (interrupts
    masked); completions are matched by descriptor address, in any order. ``timeout`` bounds every
    wait: a job not back in time means a stalled ring, which is reset and re-armed (RingTimeout
    for that job, CaamError for the others in flight), as after a ring error (JRINTR.ERR). A
    submit with no free slot waits for the driver's own jobs to complete and raises RingFull if
    none does in time, or at once when the block reports no room and none of its jobs is on the
    ring. DMA memory: ``alloc``/``put``/``free``, or a job's ``owned`` regions, freed when reaped.
    Job descriptors go to slots of a pool in DMA memory; ``separate_descriptors`` gives each one a
    region of its own, exactly its size, so that a DECO reading past its end faults (on the model:
    a DMA error), as the workbench wants for descriptor writers.

    Completion: ``complete="poll"`` (the default) polls ORSFR with the ring's interrupt masked;
    ``complete="irq"`` with ``irq`` (an object with ``fileno()``, ``wait(timeout)`` and
    ``enable()``: :class:`cryptoffload.caam.irq.Irq` over a UIO fd or the device process's
    socket) unmasks JRCFGR.IMSK and sleeps on the interrupt: one waiting thread blocks in
    ``select`` on the fd up to the job's timeout, the others on the condition; on the interrupt
    it clears JRINTR.JRI (write 1), reaps, and enables the line again. ``coalesce=(count,
    ticks)`` sets JRCFGR ICEN with ICDCT ``count`` and ICTT ``ticks`` for ``submit_many``
    batches (one interrupt per batch rather than per job); single submits turn it off again.

    For an event loop: ``completion_fd`` is the fd that becomes readable when jobs complete
    (None when polling), and ``service()`` acknowledges the interrupt, reaps what completed
    and enables the line again; it is safe to call from any thread, and when nothing is
    pending. A device that stops answering (DeviceLost) breaks the driver: every job in flight
    fails, and so does every later submit, with the reason.
    """

    def __init__(
        self,
        transport: Any,
        *,
        ring: int = 0,
        depth: int = 64,
        long_pointers: bool | None = None,
        timeout: float = 2.0,
        shared_capacity: int = 64,
        separate_descriptors: bool = False,
        complete: str = "poll",
        irq: Any = None,
        coalesce: tuple[int, int] | None = (16, 200),
    ) -> None:
        name = getattr(transport, "name", type(transport).__name__)
        svr = getattr(transport, "svr", None)
        if svr is not None and not regs.sec_present(svr):
            raise CaamUnavailable(
                f"{name} has no SEC block (SVR 0x{svr:08x} lacks the E bit "
                f"0x{regs.SVR_E_BIT:08x}): not an E part, the block is absent"
            )
        if complete not in ("poll", "irq"):
            raise ValueError(f"complete must be 'poll' or 'irq', got {complete!r}")
        if complete == "irq" and irq is None:
            raise ValueError("complete='irq' needs irq= (the ring's interrupt: an Irq)")
        if not 1 <= depth <= regs.RING_SIZE_MASK:
            raise ValueError(f"depth must be 1..{regs.RING_SIZE_MASK}, got {depth}")
        self.name = name
        self.transport = transport
        self.timeout = timeout
        self._read32: Callable[[int], int] = transport.read32
        self.caps = regs.discover(self._read32)
        self.byteorder = self.caps.byteorder
        rings = self.caps.counts["JR"]
        if not 0 <= ring < max(rings, 1):
            raise CaamUnavailable(f"{name} has {rings} job ring(s); ring {ring} does not exist")
        self.long_pointers = self._pointer_mode(long_pointers)
        self.pointer_size = 8 if self.long_pointers else 4
        order = ">" if self.byteorder == "big" else "<"
        self._packers = [struct.Struct(f"{order}{n}I") for n in range(DESC_BYTES // 4 + 1)]
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._rng_lock = threading.Lock()
        self._regions: dict[int, int] = {}
        self._bytes_in, self._bytes_out = Tally(), Tally()
        self._wiped, self._direct = Tally(), Tally()
        self._lent: set[int] = set()
        self._ring = JobRing(transport, ring, depth, self.pointer_size, self.byteorder)
        self._depth = depth
        try:
            r, ptr = self._ring, self.pointer_size
            self._check_reach(r.inring, depth * ptr)
            self._check_reach(r.outring, depth * (ptr + 4))
            self._check_reach(r.slots, depth * DESC_BYTES)
        except CaamUnavailable:
            self._ring.close()
            raise
        self._in_flight: dict[int, Job] = {}
        self._called_back: deque[Job] = deque()
        self._shared = SharedCache(shared_capacity)
        self._separate = separate_descriptors
        self._polling = False
        self._waiters = 0
        self._broken: str | None = None
        self._closed = False
        self._jobs = self._words = self._max_in_flight = 0
        self._counts: Counter[str] = Counter()
        self._errors: Counter[int] = Counter()
        self.complete = complete
        self._irq = irq if complete == "irq" else None
        self._wake = _wake_pipe(self) if self._irq is not None else None
        self._coalesce = coalesce
        if self._irq is not None:
            self._ring.cfg = 0  # interrupts unmasked, no coalescing until a batch asks
        try:
            self._ring.halt(timeout)
            self._ring.finish_reset(timeout)
        except RingStuck as exc:
            self._ring.close()
            raise CaamUnavailable(f"{name}: {exc} (is the kernel's caam_jr still bound?)") from None
        #: The fd that becomes readable when jobs complete (the ring's interrupt); None when
        #: the driver polls.
        self.completion_fd: int | None = None
        if self._irq is not None:
            self._irq.enable()
            self.completion_fd = self._irq.fileno()

    def service(self) -> int:
        """Acknowledge the interrupt if it fired, reap what completed (their done callbacks
        run, the lock released), enable the line again; how many jobs were reaped. Safe from
        any thread and when nothing is pending."""
        with self._lock:
            try:
                if self._irq is not None and self._irq.wait(0):
                    reaped = self._on_interrupt()
                else:
                    reaped = self._reap()
            except DeviceLost as exc:
                lost: DeviceLost | None = self._lost(exc)
            else:
                lost = None
        if self._called_back:  # the reaped jobs' done callbacks, the lock released
            self._run_callbacks()
        if lost is not None:
            raise lost
        return reaped

    def _set_coalescing(self, batch: int) -> None:
        """JRCFGR_LS for what is submitted next (lock held): ICEN for a batch, plain for one."""
        if self._irq is None or self._coalesce is None:
            return
        count, ticks = self._coalesce
        cfg = 0
        if batch > 1:
            count = max(1, min(count, batch, 255))
            cfg = regs.JRCFGR_ICEN | count << 8 | min(ticks, 0xFFFF) << 16
        if cfg != self._ring.cfg:
            self._ring.cfg = cfg
            self._ring.write(regs.JRCFGR_LS, cfg)

    def __repr__(self) -> str:
        return f"<Driver {self.name} ring {self._ring.index} depth {self._depth}>"

    def _pointer_mode(self, want: bool | None) -> bool:
        mcfgr = self._read32(regs.MCFGR)
        if want is None:
            return self.caps.long_pointers and bool(mcfgr & regs.MCFGR_LONG_PTR)
        if want and not self.caps.long_pointers:
            raise CaamUnavailable(
                f"{self.name} cannot use long pointers (CTPR_MS.PS is clear): the block takes "
                "32-bit pointers only"
            )
        value = mcfgr | regs.MCFGR_LONG_PTR if want else mcfgr & ~regs.MCFGR_LONG_PTR
        if value != mcfgr:
            self.transport.write32(regs.MCFGR, value)
        return bool(self._read32(regs.MCFGR) & regs.MCFGR_LONG_PTR)

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def pkha_bits(self) -> int:
        """Largest PKHA operand in bits, 0 without a PKHA."""
        return PKHA_BITS if self.caps.counts["PK"] else 0

    @property
    def broken(self) -> str | None:
        """Why the ring is out of use for good (it would not reset), else None."""
        return self._broken

    @property
    def rdsta(self) -> int:
        return self._read32(regs.RDSTA)

    def builder(self) -> DescriptorBuilder:
        """A descriptor builder in the block's byte order and pointer size."""
        return DescriptorBuilder(long_pointers=self.long_pointers, byteorder=self.byteorder)

    def pointer(self, phys: int) -> list[int]:
        """A pointer as descriptor words: two (most significant first) with long pointers."""
        return [phys >> 32, phys & 0xFFFF_FFFF] if self.long_pointers else [phys]

    def pack(self, words: Sequence[int]) -> bytes:
        """Job descriptor words (1 to 64) as they sit in memory, in the block's byte order."""
        n = len(words)
        if not 0 < n < len(self._packers):
            raise ValueError(f"a job descriptor holds 1 to 64 words, got {n}")
        try:
            return self._packers[n].pack(*words)
        except struct.error:
            bad = next(i for i, w in enumerate(words) if not 0 <= w <= 0xFFFF_FFFF)
            raise ValueError(f"descriptor word {bad} must be a 32-bit unsigned int") from None

    # DMA memory (the transport's alloc, free, read and write are thread-safe) ---------------

    def _check_reach(self, phys: int, size: int) -> None:
        if not self.long_pointers and phys + size > _FOUR_GIB:
            raise CaamUnavailable(
                f"{self.name}: DMA memory at 0x{phys:x} lies above 4 GiB and the block takes "
                "32-bit pointers (long pointers are off)"
            )

    def alloc(self, size: int) -> int:
        """``size`` bytes of DMA memory (at least 1); its physical address."""
        size = size if size > 0 else 1
        phys = self.transport.alloc(size, 64)
        if phys + size > _FOUR_GIB and not self.long_pointers:
            self.transport.free(phys)
            self._check_reach(phys, size)
        self._regions[phys] = size
        return phys

    def put(self, data: bytes | bytearray | memoryview) -> int:
        """A new DMA region holding ``data``."""
        n = len(data)
        size = n if n else 1
        transport = self.transport
        phys = transport.alloc(size, 64)
        if phys + size > _FOUR_GIB and not self.long_pointers:
            transport.free(phys)
            self._check_reach(phys, size)
        self._regions[phys] = size
        if n:
            transport.write(phys, data)
            tally = self._bytes_in
            tally.append(n)
            if len(tally) > tally.FOLD_AT:
                tally.total()
        return phys

    def write(self, phys: int, data: bytes | bytearray | memoryview) -> None:
        self.transport.write(phys, data)
        tally = self._bytes_in
        tally.append(len(data))
        if len(tally) > tally.FOLD_AT:
            tally.total()

    def read(self, phys: int, n: int) -> bytes:
        tally = self._bytes_out
        tally.append(n)
        if len(tally) > tally.FOLD_AT:
            tally.total()
        return self.transport.read(phys, n) if n else b""

    def read_into(self, phys: int, out: bytearray | memoryview) -> None:
        self._bytes_out.append(len(out))
        self.transport.read_into(phys, out)

    def free(self, phys: int) -> None:
        """Return a region from ``alloc`` or ``put``, wiped first (a lent one: not wiped)."""
        size = self._regions.pop(phys, None)
        if size is None:
            raise ValueError(f"0x{phys:x} is not DMA memory this driver allocated")
        if phys in self._lent:
            self._lent.discard(phys)
        else:
            wipe(self.transport, phys, size)
            tally = self._wiped
            tally.append(size)
            if len(tally) > tally.FOLD_AT:
                tally.total()
        self.transport.free(phys)

    def lend(self, size: int) -> tuple[int, memoryview]:
        """A region for a caller to own (a DmaBuffer): its address and a view of it. Never
        wiped by the driver (the caller's data, not ours); ``free`` gives it back."""
        view = getattr(self.transport, "view", None)
        if view is None:
            raise CaamUnavailable(f"{self.name}: the transport gives no views of DMA memory")
        phys = self.alloc(size)
        try:
            mapped = view(phys, size)
        except BaseException:
            self.free(phys)
            raise
        self._lent.add(phys)
        return phys, mapped

    def count_direct(self, n: int) -> None:
        """``n`` bytes a job read or wrote in place, in a caller's DMA buffer (no copy)."""
        tally = self._direct
        tally.append(n)
        if len(tally) > tally.FOLD_AT:
            tally.total()

    # Shared descriptors ---------------------------------------------------------------------

    def shared(self, key: Hashable, build: Callable[[], Sequence[int]]) -> int:
        """The address of the shared descriptor cached under ``key``, built and stored on a miss.

        A job uses it through its header's SHARED pointer; an evicted one is freed (wiped: it may
        hold a key) once no job in flight and no caller that got its address still needs it.
        """
        with self._lock:
            entry = self._shared.get(key)
            if entry is not None:
                return entry.phys
        words = build()
        data = struct.pack(f"{'>' if self.byteorder == 'big' else '<'}{len(words)}I", *words)
        phys = self.alloc(len(data))
        self.transport.write(phys, data)
        with self._lock:
            entry = self._shared.get(key)
            if entry is not None:  # another thread built it meanwhile
                freeable = [SharedEntry(phys, len(data))]
            else:
                entry = SharedEntry(phys, len(data))
                freeable = self._shared.add(key, entry)
        for old in freeable:
            self._wipe_free(old.phys, old.size)
        return entry.phys

    # Submission -----------------------------------------------------------------------------

    def submit(
        self,
        words: Sequence[int],
        *,
        owned: Sequence[int] = (),
        collect: Sequence[tuple[int, Out]] = (),
    ) -> Job:
        """Put one job on the ring (thread-safe): RingFull when no slot frees in time, the job's
        ``owned`` regions freed then too."""
        job = Job(self, owned, collect)
        try:
            data = self.pack(words)
        except ValueError:
            self._release(job)
            raise
        with self._lock:  # the common case: a slot free at once
            try:
                if self._ring.cfg & regs.JRCFGR_ICEN:
                    self._set_coalescing(1)
                if (
                    len(self._in_flight) < self._depth
                    and self._broken is None
                    and not self._closed
                    and self._ring.room()
                ):
                    self._place_one(job, words, data)
                    return job
            except DeviceLost as exc:
                self._release(job)
                raise self._lost(exc) from None
        _, error = self._enqueue([job], [words], [data])
        if self._called_back:  # jobs reaped while it waited for room
            self._run_callbacks()
        if error is not None:
            self._release(job)
            raise error
        return job

    def submit_many(self, requests: Sequence[Request | Sequence[int]]) -> list[Job]:
        """Every request on the ring, as many at once as there are free slots (one IRJAR write
        each time), reaping in between; jobs that found no room end with RingFull."""
        jobs: list[Job] = []
        words: list[Sequence[int]] = []
        datas: list[bytes] = []
        packers = self._packers
        for r in requests:
            w, owned, collect = r if isinstance(r, Request) else (r, (), ())
            jobs.append(Job(self, owned, collect))
            words.append(w)
            if 0 < len(w) <= 64:
                try:
                    datas.append(packers[len(w)].pack(*w))
                    continue
                except struct.error:
                    pass
            for other in requests[len(jobs) :]:  # a bad request: nothing goes on the ring
                if isinstance(other, Request):
                    jobs.append(Job(self, other.owned, ()))
            for job in jobs:
                self._release(job)
            self.pack(w)  # raises the error that names the word
        if self._irq is not None and self._coalesce is not None:
            with self._lock:
                try:
                    self._set_coalescing(len(jobs))
                except DeviceLost as exc:
                    for job in jobs:
                        self._release(job)
                    raise self._lost(exc) from None
        placed, error = self._enqueue(jobs, words, datas)
        if self._called_back:
            self._run_callbacks()
        for job in jobs[placed:]:
            self._release(job)
            job.error = error
        return jobs

    def run(self, words: Sequence[int], **kwargs: Any) -> int:
        """Submit one job and wait: its status word."""
        return self.submit(words, **kwargs).wait()

    def run_many(self, jobs: Sequence[Request | Sequence[int]]) -> list[int]:
        """Every job on the ring, then every one reaped: their status words, in order. A job the
        ring failed raises its error once all the others are back (``submit_many`` gives each
        job's own outcome)."""
        submitted = self.submit_many(jobs)
        words: list[int] = []
        first: BaseException | None = None
        for job in submitted:
            try:
                words.append(job.wait())
            except (CaamError, RingFull) as exc:
                first = first or exc
                words.append(FLUSHED)
        if first is not None:
            raise first
        return words

    def ensure_rng(self) -> None:
        """Instantiate RNG4 state handle 0 unless RDSTA says it is; after a failed attempt,
        retry with a longer entropy sample (RTSDCTL). CaamError when every attempt failed."""
        with self._rng_lock:
            if rngboot.ensure(self):
                with self._lock:
                    self._counts["rng_instantiations"] += 1

    # Figures and close ----------------------------------------------------------------------

    @property
    def figures(self) -> dict[str, Any]:
        """Jobs, descriptor words, bytes each way, bounce bytes, errors by status, RNG
        instantiations, jobs in flight (now and at most), ring resets, DMA memory in use, how
        jobs complete (poll or irq), interrupts handled, devices lost.

        Copies and wipes: ``copy_in_bytes`` / ``copy_out_bytes`` (the same counts as
        ``bytes_in`` / ``bytes_out``: bytes the driver copied into DMA memory and read back out,
        payload, IVs, AAD and S/G tables alike; not the job descriptors), ``wipe_bytes`` (zeros
        written over regions before they were freed) and ``zero_copy_bytes`` (bytes jobs read
        or wrote in place in callers' DMA buffers)."""
        in_use = sum(list(self._regions.values()))
        with self._lock:
            c = self._counts
            return {
                "jobs": self._jobs,
                "words": self._words,
                "bytes_in": self._bytes_in.total(),
                "bytes_out": self._bytes_out.total(),
                "copy_in_bytes": self._bytes_in.total(),
                "copy_out_bytes": self._bytes_out.total(),
                "wipe_bytes": self._wiped.total(),
                "zero_copy_bytes": self._direct.total(),
                "bounce_bytes": int(getattr(self.transport, "bounce_bytes", 0)),
                "errors": {f"0x{w:08x}": n for w, n in sorted(self._errors.items())},
                "rng_instantiations": c["rng_instantiations"],
                "in_flight": len(self._in_flight),
                "max_in_flight": self._max_in_flight,
                "ring_full": c["ring_full"],
                "ring_errors": c["ring_errors"],
                "ring_resets": c["ring_resets"],
                "timeouts": c["timeouts"],
                "shared_cached": len(self._shared.by_key),
                "shared_builds": self._shared.builds,
                "shared_hits": self._shared.hits,
                "dma_in_use": in_use,
                "complete": self.complete,
                "interrupts": c["interrupts"],
                "device_lost": c["device_lost"],
            }

    def close(self) -> None:
        """Reset the ring (jobs still in flight fail), then free every region this driver holds:
        shared descriptors (wiped), the rings, regions its callers never freed. The transport
        stays open: whoever made it closes it."""
        with self._lock:
            if self._closed:
                return
            self._ring.cfg = regs.JRCFGR_IMSK  # the ring is left masked, as found
            if self._broken is None:
                try:
                    if self._in_flight:
                        self._recover("driver closed", None)
                    else:
                        self._ring.halt(self.timeout)
                        self._ring.finish_reset(self.timeout)
                except (RingStuck, DeviceLost) as exc:
                    self._break(str(exc))
            self._closed = True
            entries = self._shared.all()
            self._shared.clear()
        if self._called_back:  # the jobs the reset failed
            self._run_callbacks()
        for entry in entries:
            self._wipe_free(entry.phys, entry.size)
        left = list(self._regions.items())
        self._regions.clear()
        for phys, size in left:
            if phys not in self._lent:  # a caller's buffer is not ours to wipe
                wipe(self.transport, phys, size)
                self._wiped.append(size)
            self.transport.free(phys)
        self._lent.clear()
        self.transport.write(self._ring.slots, bytes(self._depth * DESC_BYTES))
        self._ring.close()

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _wake_pipe(driver: Driver) -> tuple[int, int]:
    """A non-blocking pipe for ``driver``'s wake-ups, closed when the driver is collected (not
    at ``close``: a thread may still be leaving a wait on it then)."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    weakref.finalize(driver, _close_both, r, w)
    return r, w


def _close_both(r: int, w: int) -> None:
    os.close(r)
    os.close(w)
