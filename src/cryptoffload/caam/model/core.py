"""The CAAM model's register file and job rings: what a driver sees through read32 and write32.

Behaviour chosen where the brief is silent (a driver written to the brief works either way):
- Jobs run synchronously inside the IRJAR write (and inside ORJRR or ``unstall()`` when they had
  to wait): a job waits in the input ring while the output ring is full or the model is stalled,
  and its slot counts as used (IRSAR) until it runs.
- IRJAR asking for more jobs than IRSAR allows adds none and flags a ring error: JRINTR.ERR with
  error type ADD_OFL (9); ORJRR removing more than ORSFR removes none, error type REMOVE_OFL (8).
  Input or output entries at unreadable/unwritable addresses flag BAD_INPADDR (3) / BAD_OUTADDR
  (4). Errors do not stop the ring; writing 1 to JRINTR.ERR clears the error and its type.
- IRRIR and ORWIR count entries, not bytes (uncertain on hardware). Input entries are one
  pointer, output entries a pointer then the 32-bit status, packed (8 bytes, or 12 with long
  pointers); a long pointer is two words, most significant first, each in the part's byte order.
- JRSTAR reads the status word of the most recently completed job.
- JRINTR.JRI latches when a job completes while JRCFGR.IMSK is clear (and when IMSK is cleared
  with completions still in the output ring). With JRCFGR.ICEN (coalescing) it latches only once
  ICDCT (JRCFGR_LS bits 15:8, Linux's field) completions wait in the output ring, or ICTT (bits
  31:16) timer ticks after the first of them completed; the brief names the fields but not the
  tick, so one tick is taken as 1 microsecond, and ICDCT 0 as 1. The timer is looked at on each
  completion, on each JRINTR read and by ``tick()`` (the device process calls it).
- ``queued=True`` (the device process): IRJAR only queues jobs; the caller takes them
  (``take_job``), runs them (``execute``) and posts their completions (``finish_job``), as DECOs
  would, concurrently with the driver. The default runs them synchronously, as described above.
- JRCR reset: the first RESET write halts the ring: jobs still waiting in the input ring are
  returned with status DECO JRRESET (0x4000001A) while the output ring has room (the rest are
  dropped); JRINTR shows halt 0x4 for one read, then 0x8; JRCR reads 1. A RESET write while
  halted resets the ring (indices, counts, pending jobs, JRINTR to 0; base, size and JRCFGR
  registers are kept); JRCR reads 1 once more, then 0. A halted ring ignores IRJAR.
- MCFGR.LONG_PTR can be set only where CTPR_MS.PS is set; MCFGR.SWRESET returns every ring, the
  RNG (and the secure keys, not the master key), DECO 0's control and the controller registers
  to their power-on state (faults and counters are kept). The TRNG registers Linux programs
  before instantiating (RTMCTL, RTSCMISC, RTPKRRNG, RTPKRMAX, RTSDCTL, RTFRQMIN/MAX, RTSCML,
  RTSCRL1-6), SCFGR and other unmodelled controller registers are plain storage reading 0 at
  power-on (the hardware's reset values are not public; the entropy they would shape comes
  from the seed); RDSTA comes from the RNG (IF0/IF1, PR0/PR1, SKVN) and ignores writes.
- DECORR/DECORSR and DECO 0's page (0x8000) run descriptors under software control, as Linux
  runs the RNG instantiation (``decoctl``). Unmodelled ring registers read 0 and ignore writes;
  the version/ID registers (0xE80-0xFFF) read in page 0 and in each ring page, and ignore writes.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from cryptoffload.caam import regs, status
from cryptoffload.caam.model.deco import JobContext, run_job
from cryptoffload.caam.model.decoctl import DESCBUF_WINDOW, DecoControl, DescbufWindow
from cryptoffload.caam.model.keys import DeviceKeys
from cryptoffload.caam.model.memory import DmaError, DmaMemory
from cryptoffload.caam.model.parts import PARTS, Part
from cryptoffload.caam.model.rng import Rng4

__all__ = ["CaamModel", "Counters", "SecAbsent"]

#: Status of a job a ring reset returned without running it.
FLUSHED = status.deco(status.DECO_JRRESET)


class SecAbsent(RuntimeError):
    """The part has no SEC block: on silicon the access would fault the bus."""


class Counters:
    """What the model ran: jobs, jobs per CHA, jobs per status word, flushed jobs, ring errors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.jobs = 0
        self.per_cha: Counter[str] = Counter()
        self.per_status: Counter[int] = Counter()
        self.flushed = 0
        self.ring_errors = 0

    def record(self, chas: tuple[str, ...], word: int) -> None:
        """Count one job that ran, with the CHAs it used and the status it reported."""
        with self._lock:
            self.jobs += 1
            self.per_cha.update(dict.fromkeys(chas, 1))
            self.per_status[word] += 1

    def record_flushed(self) -> None:
        """Count one job a ring reset returned without running it."""
        with self._lock:
            self.flushed += 1

    def record_ring_error(self) -> None:
        """Count one ring error (JRINTR.ERR)."""
        with self._lock:
            self.ring_errors += 1

    def snapshot(self) -> dict[str, Any]:
        """A plain dict copy; status words as "0x%08x" strings."""
        with self._lock:
            return {
                "jobs": self.jobs,
                "per_cha": dict(self.per_cha),
                "per_status": {f"0x{w:08x}": n for w, n in sorted(self.per_status.items())},
                "flushed": self.flushed,
                "ring_errors": self.ring_errors,
            }


class _Ring:
    """One job ring's registers and its place in the rings in memory."""

    def __init__(self) -> None:
        self.forced_full = False
        self.power_on()

    def power_on(self) -> None:
        self.irba = 0
        self.orba = 0
        self.irs = 0
        self.ors = 0
        self.cfg_ms = 0
        self.cfg_ls = 0
        self.reset()

    def reset(self) -> None:
        self.pending = 0  # jobs added and not yet taken from the input ring
        self.read_index = 0  # IRRIR
        self.write_index = 0  # ORWIR
        self.full = 0  # ORSFR
        self.jrstar = 0
        self.jri = False
        self.first_done = 0.0  # when the oldest completion not yet signalled arrived (ICTT)
        self.err_type = 0  # 0: no error
        self.halt = 0
        self.reset_busy = False

    def slots(self) -> int:
        return 0 if self.forced_full else max(0, self.irs - self.pending)

    def jrintr(self) -> int:
        value = self.halt
        if self.jri:
            value |= regs.JRINTR_JRI
        if self.err_type:
            value |= regs.JRINTR_ERR | (self.err_type << regs.JRINTR_ERR_TYPE_SHIFT)
        return value


class CaamModel:
    """A CAAM / SEC block: 32-bit registers relative to the block base, DMA memory, job rings.

    ``seed`` makes the model repeatable and names the device: it fixes the RNG's entropy and the
    device's master key (two seeds are two devices: blobs of one do not open on the other);
    without a seed both are random.

    Fault injection (for driver tests): ``force_status``, ``stall``/``unstall``,
    ``make_ring_full``, ``corrupt_output`` (job-ring jobs only), ``fail_rng_instantiation``.
    ``counters`` counts jobs, those DECO 0 ran for software included. ``memory``: the DMA memory
    the jobs read and write (default a new ``DmaMemory``; the device process gives its pool).
    """

    def __init__(
        self,
        part: str | Part = "t2080",
        *,
        seed: bytes | None = None,
        queued: bool = False,
        memory: Any = None,
    ) -> None:
        if isinstance(part, Part):
            self.part = part
        else:
            try:
                self.part = PARTS[part]
            except KeyError:
                known = ", ".join(sorted(PARTS))
                raise ValueError(f"unknown CAAM part {part!r}; known parts: {known}") from None
        self.svr = self.part.svr
        self.memory = DmaMemory() if memory is None else memory
        self.keys = DeviceKeys(seed)
        self.rng = Rng4(seed, keys=self.keys)
        self.deco0 = DecoControl(self.memory, self.part.byteorder, self._run_direct)
        self.counters = Counters()
        self._lock = threading.RLock()
        self._rings = [_Ring() for _ in range(self.part.job_rings)]
        self._mcfgr = 0
        self._ctrl: dict[int, int] = {}
        self._forced_status: int | None = None
        self._corrupt = False
        self._stalled = False
        self.queued = queued

    def __repr__(self) -> str:
        return f"CaamModel(part={self.part.name!r})"

    @property
    def long_pointers(self) -> bool:
        """Whether descriptors and ring entries use 64-bit pointers (MCFGR.LONG_PTR)."""
        return bool(self._mcfgr & regs.MCFGR_LONG_PTR)

    # Register access.

    def _check(self, offset: int) -> None:
        if not self.part.sec:
            raise SecAbsent(
                f"{self.part.name} has no SEC block: SVR 0x{self.svr:08x} lacks the E bit "
                f"0x{regs.SVR_E_BIT:08x}; check the SVR before touching the block"
            )
        if not 0 <= offset < regs.BLOCK_SIZE or offset % 4:
            raise ValueError(
                f"register offset must be a multiple of 4 below 0x{regs.BLOCK_SIZE:x}, "
                f"got 0x{offset:x}"
            )

    def read32(self, offset: int) -> int:
        """Read the 32-bit register at ``offset`` from the block base."""
        self._check(offset)
        with self._lock:
            page, reg = divmod(offset, regs.PAGE_SIZE)
            if page == regs.DECO_PAGE:
                return self.deco0.read_page(reg)
            if page > len(self._rings):
                return 0
            if reg >= regs.ID_SPACE_START:
                return self.part.id_registers.get(reg, 0)
            if page == 0:
                return self._read_ctrl(reg)
            return self._read_ring(self._rings[page - 1], reg)

    def write32(self, offset: int, value: int) -> None:
        """Write the 32-bit register at ``offset`` from the block base."""
        self._check(offset)
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"register value must fit in 32 bits, got 0x{value:x}")
        with self._lock:
            page, reg = divmod(offset, regs.PAGE_SIZE)
            if page == regs.DECO_PAGE:
                self.deco0.write_page(reg, value)
                return
            if page > len(self._rings) or reg >= regs.ID_SPACE_START:
                return
            if page == 0:
                self._write_ctrl(reg, value)
            else:
                self._write_ring(self._rings[page - 1], reg, value)

    def _read_ctrl(self, reg: int) -> int:
        if reg == regs.MCFGR:
            return self._mcfgr
        if reg == regs.RDSTA:
            return self.rng.rdsta()
        deco = self.deco0.read_ctrl(reg)
        if deco is not None:
            return deco
        return self._ctrl.get(reg, 0)

    def _write_ctrl(self, reg: int, value: int) -> None:
        if reg == regs.MCFGR:
            if value & regs.MCFGR_SWRESET:
                self._software_reset()
                return
            if not regs.long_pointers_supported(self.part.id_registers.get(regs.CTPR_MS, 0)):
                value &= ~regs.MCFGR_LONG_PTR
            self._mcfgr = value
        elif self.deco0.write_ctrl(reg, value):
            if not self.deco0.held:  # released: jobs that waited for the only DECO run now
                for ring in self._rings:
                    self._pump(ring)
        elif reg != regs.RDSTA:
            self._ctrl[reg] = value

    def _software_reset(self) -> None:
        for ring in self._rings:
            ring.power_on()
        self._mcfgr = 0
        self._ctrl.clear()
        self.rng.reset()
        self.deco0.power_on()

    def _read_ring(self, ring: _Ring, reg: int) -> int:
        if reg == regs.JRINTR:
            if ring.first_done and not ring.jri:
                self._coalesce(ring, time.monotonic())
            value = ring.jrintr()
            if ring.halt == regs.JRINTR_HALT_IN_PROGRESS:
                ring.halt = regs.JRINTR_HALT_DONE
            return value
        if reg == regs.JRCR:
            if ring.reset_busy:
                ring.reset_busy = False
                return regs.JRCR_RESET
            return regs.JRCR_RESET if ring.halt else 0
        simple = {
            regs.IRBAR_HI: ring.irba >> 32,
            regs.IRBAR_LO: ring.irba & 0xFFFFFFFF,
            regs.ORBAR_HI: ring.orba >> 32,
            regs.ORBAR_LO: ring.orba & 0xFFFFFFFF,
            regs.IRSR: ring.irs,
            regs.ORSR: ring.ors,
            regs.IRSAR: ring.slots(),
            regs.ORSFR: ring.full,
            regs.JRSTAR: ring.jrstar,
            regs.JRCFGR_MS: ring.cfg_ms,
            regs.JRCFGR_LS: ring.cfg_ls,
            regs.IRRIR: ring.read_index,
            regs.ORWIR: ring.write_index,
        }
        return simple.get(reg, 0)

    def _write_ring(self, ring: _Ring, reg: int, value: int) -> None:
        if reg == regs.IRBAR_HI:
            ring.irba = (value << 32) | (ring.irba & 0xFFFFFFFF)
        elif reg == regs.IRBAR_LO:
            ring.irba = (ring.irba & ~0xFFFFFFFF) | value
        elif reg == regs.ORBAR_HI:
            ring.orba = (value << 32) | (ring.orba & 0xFFFFFFFF)
        elif reg == regs.ORBAR_LO:
            ring.orba = (ring.orba & ~0xFFFFFFFF) | value
        elif reg == regs.IRSR:
            ring.irs = value & regs.RING_SIZE_MASK
        elif reg == regs.ORSR:
            ring.ors = value & regs.RING_SIZE_MASK
        elif reg == regs.IRJAR:
            self._add_jobs(ring, value)
        elif reg == regs.ORJRR:
            self._remove_jobs(ring, value)
        elif reg == regs.JRINTR:
            if value & regs.JRINTR_JRI:
                ring.jri = False
            if value & regs.JRINTR_ERR:
                ring.err_type = 0
        elif reg == regs.JRCFGR_MS:
            ring.cfg_ms = value
        elif reg == regs.JRCFGR_LS:
            unmasked = ring.cfg_ls & regs.JRCFGR_IMSK and not value & regs.JRCFGR_IMSK
            ring.cfg_ls = value
            if unmasked and ring.full:
                ring.jri = True
        elif reg == regs.JRCR and value & regs.JRCR_RESET:
            self._ring_command_reset(ring)

    # The job ring protocol.

    def _ring_error(self, ring: _Ring, kind: int) -> None:
        ring.err_type = kind
        self.counters.record_ring_error()

    def _add_jobs(self, ring: _Ring, n: int) -> None:
        if n == 0 or ring.halt:
            return
        if n > ring.slots():
            self._ring_error(ring, regs.JR_ERR_ADD_OFL)
            return
        ring.pending += n
        self._pump(ring)

    def _remove_jobs(self, ring: _Ring, n: int) -> None:
        if n > ring.full:
            self._ring_error(ring, regs.JR_ERR_REMOVE_OFL)
            return
        ring.full -= n
        self._pump(ring)

    def _pointer_words(self) -> int:
        return 2 if self.long_pointers else 1

    def _take_entry(self, ring: _Ring) -> int | None:
        """The next descriptor pointer from the input ring, or None after a ring error."""
        size = 4 * self._pointer_words()
        addr = ring.irba + ring.read_index * size
        ring.read_index = (ring.read_index + 1) % ring.irs if ring.irs else 0
        ring.pending -= 1
        try:
            raw = self.memory.read(addr, size)
        except DmaError:
            self._ring_error(ring, regs.JR_ERR_BAD_INPADDR)
            return None
        value = 0
        for i in range(0, size, 4):
            value = (value << 32) | int.from_bytes(raw[i : i + 4], self.part.byteorder)
        return value

    def _complete(self, ring: _Ring, desc: int, word: int) -> None:
        order = self.part.byteorder
        if self.long_pointers:
            entry = (desc >> 32).to_bytes(4, order) + (desc & 0xFFFFFFFF).to_bytes(4, order)
        else:
            entry = (desc & 0xFFFFFFFF).to_bytes(4, order)
        entry += word.to_bytes(4, order)
        try:
            self.memory.write(ring.orba + ring.write_index * len(entry), entry)
        except DmaError:
            self._ring_error(ring, regs.JR_ERR_BAD_OUTADDR)
            return
        ring.write_index = (ring.write_index + 1) % ring.ors
        ring.full += 1
        ring.jrstar = word
        if not ring.cfg_ls & regs.JRCFGR_IMSK:
            if ring.cfg_ls & regs.JRCFGR_ICEN:
                now = time.monotonic()
                if not ring.first_done:
                    ring.first_done = now
                self._coalesce(ring, now)
            else:
                ring.jri = True

    @staticmethod
    def _coalesce(ring: _Ring, now: float) -> None:
        """JRI under coalescing: ICDCT completions waiting, or ICTT ticks (1 us) since the first."""
        cfg = ring.cfg_ls
        count = (cfg >> 8) & 0xFF or 1
        ticks = cfg >> 16
        if ring.full >= count or now - ring.first_done >= ticks * 1e-6:
            ring.jri = True
            ring.first_done = 0.0

    def tick(self, now: float | None = None) -> None:
        """Let the coalescing timers of every ring run up to ``now`` (monotonic seconds)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            for ring in self._rings:
                if ring.first_done and not ring.jri:
                    if ring.full:
                        self._coalesce(ring, now)
                    else:
                        ring.first_done = 0.0

    def _deco_free(self) -> bool:
        """Whether a DECO can take a ring's job: not when software holds the only one."""
        return not (self.deco0.held and self.part.decos <= 1)

    def _pump(self, ring: _Ring) -> None:
        """Run waiting jobs while the ring may: not stalled or halted, output ring not full."""
        if self.queued:
            return
        while (
            ring.pending
            and not self._stalled
            and not ring.halt
            and ring.full < ring.ors
            and self._deco_free()
        ):
            desc = self._take_entry(ring)
            if desc is not None:
                self._complete(ring, desc, self._execute(desc))

    def _context(self, memory: DmaMemory | DescbufWindow) -> JobContext:
        return JobContext(
            memory=memory,  # type: ignore[arg-type]  # DescbufWindow reads and writes alike
            part=self.part,
            rng=self.rng,
            long_pointers=self.long_pointers,
        )

    def _run_direct(self, window: DescbufWindow) -> int:
        """Run DECO 0's descriptor buffer for software (``decoctl``); returns the status."""
        result = run_job(DESCBUF_WINDOW, self._context(window))
        self.counters.record(tuple(result.chas), result.status)
        return result.status

    def _execute(self, desc: int) -> int:
        result = run_job(desc, self._context(self.memory))
        word = result.status
        if self._forced_status is not None:
            word, self._forced_status = self._forced_status, None
        if self._corrupt:
            written = [(addr, n) for addr, n in result.outputs if n > 0]
            if written:
                addr, _ = written[-1]
                self.memory.write(addr, bytes([self.memory.read(addr, 1)[0] ^ 0xFF]))
                self._corrupt = False
        self.counters.record(tuple(result.chas), word)
        return word

    # Jobs run by a caller (queued mode: the device process's DECOs).

    def take_job(self, index: int, in_decos: int = 0) -> int | None:
        """The next job's descriptor address from ring ``index``, taken off the input ring (its
        slot is free again); None when there is none, the ring is halted or stalled, or the
        output ring has no room for it beside ``in_decos`` jobs already taken and not finished."""
        with self._lock:
            ring = self._rings[index]
            while (
                ring.pending
                and not self._stalled
                and not ring.halt
                and ring.full + in_decos < ring.ors
                and self._deco_free()
            ):
                desc = self._take_entry(ring)
                if desc is not None:
                    return desc
            return None

    def execute(self, desc: int) -> int:
        """Run the job descriptor at ``desc`` (its status word), as a DECO would."""
        return self._execute(desc)

    def finish_job(self, index: int, desc: int, word: int) -> None:
        """Post a taken job's completion on ring ``index``'s output ring."""
        with self._lock:
            self._complete(self._rings[index], desc, word)

    def interrupt(self, index: int) -> bool:
        """Whether ring ``index`` asserts its interrupt line: JRI or ERR, with IMSK clear."""
        ring = self._rings[index]
        return not ring.cfg_ls & regs.JRCFGR_IMSK and (ring.jri or bool(ring.err_type))

    def halting(self, index: int) -> bool:
        """Whether ring ``index`` was asked to halt (its first JRCR reset) and has not yet."""
        return self._rings[index].halt == regs.JRINTR_HALT_IN_PROGRESS

    def _ring_command_reset(self, ring: _Ring) -> None:
        if ring.halt == 0:
            while ring.pending:
                desc = self._take_entry(ring)
                if desc is not None and ring.full < ring.ors:
                    self._complete(ring, desc, FLUSHED)
                    self.counters.record_flushed()
            ring.halt = regs.JRINTR_HALT_IN_PROGRESS
        elif ring.halt == regs.JRINTR_HALT_DONE:
            ring.reset()
            ring.reset_busy = True

    # Fault injection.

    def force_status(self, word: int) -> None:
        """The next job to run (on any ring) runs, but reports ``word`` as its status."""
        if not 0 <= word <= 0xFFFFFFFF:
            raise ValueError(f"status word must fit in 32 bits, got 0x{word:x}")
        with self._lock:
            self._forced_status = word

    def stall(self) -> None:
        """Stop completing jobs on every ring: added jobs wait in the input rings."""
        with self._lock:
            self._stalled = True

    def unstall(self) -> None:
        """Resume: jobs that waited run now, as far as the output rings have room."""
        with self._lock:
            self._stalled = False
            for ring in self._rings:
                self._pump(ring)

    def make_ring_full(self, full: bool = True, ring: int | None = None) -> None:
        """Make IRSAR read 0 on ``ring`` (every ring when None): adding a job is then refused."""
        with self._lock:
            targets = self._rings if ring is None else [self._rings[ring]]
            for r in targets:
                r.forced_full = full

    def corrupt_output(self) -> None:
        """Invert the first byte of the last buffer written by the next job that writes one."""
        with self._lock:
            self._corrupt = True

    def fail_rng_instantiation(self) -> None:
        """The next RNG4 instantiation fails, once."""
        with self._lock:
            self.rng.fail_next_instantiate = True
