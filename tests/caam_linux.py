"""What the Linux CAAM driver does to the block, in Python: DECO 0 runs, ring jobs, its descriptors.

Written from the summary in shared/notes/linux-caam-descriptors.md (sections 2.4-2.6): the
register sequence of ctrl.c (kick_trng, instantiate_rng, deinstantiate_rng, the DECO 0 run), the
descriptor words of ctrl.c, caamrng.c, caamprng.c and blob_gen.c, and the black-key descriptors
of the posted protected-key series. Used by test_caam_rng_linux.py and test_caam_blob.py. What
the project's own driver does with the same operations is in src/cryptoffload/caam (rngboot.py,
recipes/rng.py, recipes/blob.py); these are the kernel's shapes the model is checked against.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptoffload.caam import regs
from cryptoffload.caam.desc.words import from_bytes
from cryptoffload.caam.jr.driver import Driver, Job
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.model import CaamModel

#: ctrl.c's success rule after masking the DECO's status with 0xF00000FF.
DECO_OK = (0, 0x70000000)
EAGAIN = -11
POLLS = 100

HALT = 0xA2800000  # JUMP class 1 HALT: wait for class 1 done, then stop
WAIT_CLASS1 = 0xA2000001  # JUMP class 1 +1
LOAD_CLRW = (0x10880004, 0x00000001)  # LOAD immediate 1 into Clear-Written
OP_SK = 0x82501000  # RNG, SH0, generate the secure keys
OP_RNG_INIT_PR = 0x82500006  # RNG instantiate with prediction resistance (| handle << 4)
OP_RNG_UNINSTANTIATE = 0x8250000C  # (| handle << 4)


def header(length: int) -> int:
    """A plain job descriptor header: ``0xB0800000 | len``."""
    return 0xB0800000 | length


def instantiation_desc(handle: int, gen_sk: bool) -> list[int]:
    """ctrl.c build_instantiation_desc: SH0 with SK is 7 words, otherwise 3."""
    words = [OP_RNG_INIT_PR | handle << 4]
    if handle == 0 and gen_sk:
        words += [WAIT_CLASS1, *LOAD_CLRW, OP_SK]
    words.append(HALT)
    return [header(len(words) + 1), *words]


def deinstantiation_desc(handle: int) -> list[int]:
    """ctrl.c build_deinstantiation_desc: uninstantiate, then HALT."""
    return [header(3), OP_RNG_UNINSTANTIATE | handle << 4, HALT]


def caamrng_desc(pointer: int, length: int = 16, *, pr: bool = True) -> list[int]:
    """caamrng.c (hwrng, PR on) and caamprng.c (PR off) generate jobs: FIFO STORE RNGSTORE."""
    return [header(4), 0x82500000 | (0x2 if pr else 0), 0x60340000 | length, pointer]


CAAMPRNG_RESEED = [header(2), 0x82500008]


class Deco0:
    """ctrl.c run_descriptor_deco0: request DECO 0, load its buffer, start it, poll, release."""

    def __init__(self, model: CaamModel, *, virt: bool = False) -> None:
        self.model = model
        self.virt = virt
        self.base = regs.deco_base(0)
        self.era = regs.era(model.read32(regs.CCBVID))

    def _poll(self, offset: int, bit: int) -> None:
        for _ in range(POLLS):
            if self.model.read32(offset) & bit:
                return
        raise TimeoutError(f"register 0x{offset:x} never showed bit 0x{bit:x}")

    def run(self, words: Sequence[int]) -> int:
        """Run ``words`` on DECO 0; returns the status masked as ctrl.c masks it."""
        m = self.model
        if self.virt:
            m.write32(regs.DECORSR, m.read32(regs.DECORSR) | regs.DECORSR_JR0)
            self._poll(regs.DECORSR, regs.DECORSR_VALID)
        m.write32(regs.DECORR, m.read32(regs.DECORR) | regs.DECORR_RQD0ENABLE)
        self._poll(regs.DECORR, regs.DECORR_DEN0)
        for i, word in enumerate(words):
            m.write32(self.base + regs.DECO_DESCBUF + 4 * i, word)
        flags = regs.DECO_JQCR_WHL | (regs.DECO_JQCR_FOUR if len(words) >= 4 else 0)
        m.write32(self.base + regs.DECO_JR_CTL_HI, flags)
        for _ in range(POLLS):
            if self.era < 10:
                dbg = m.read32(self.base + regs.DECO_DESC_DBG)
                state = (dbg >> regs.DESC_DBG_STATE_SHIFT) & regs.DECO_STATE_MASK
            else:
                dbg = m.read32(self.base + regs.DECO_DBG_EXEC)
                state = (dbg >> regs.DBG_EXEC_STATE_SHIFT) & regs.DECO_STATE_MASK
            if state == regs.DECO_STATE_HOST_ERR or not dbg & regs.DESC_DBG_VALID:
                break
        word = m.read32(self.base + regs.DECO_OP_STATUS_HI) & regs.DECO_OP_STATUS_HI_ERR_MASK
        m.write32(regs.DECORR, m.read32(regs.DECORR) & ~regs.DECORR_RQD0ENABLE & 0xFFFFFFFF)
        if self.virt:
            m.write32(regs.DECORSR, m.read32(regs.DECORSR) & ~regs.DECORSR_JR0 & 0xFFFFFFFF)
        return word


def kick_trng(model: CaamModel, ent_delay: int) -> None:
    """ctrl.c kick_trng: program mode, entropy delay, frequency limits, statistical checks."""
    m = model
    m.write32(regs.RTMCTL, m.read32(regs.RTMCTL) | regs.RTMCTL_PRGM | regs.RTMCTL_ACC)
    old = m.read32(regs.RTSDCTL)
    if ent_delay > old >> regs.RTSDCTL_ENT_DLY_SHIFT:
        m.write32(regs.RTFRQMIN, ent_delay >> 2)
        m.write32(regs.RTFRQMAX, 1 << 20)
    m.write32(regs.RTSDCTL, ent_delay << regs.RTSDCTL_ENT_DLY_SHIFT | 512)
    if old & regs.RTSDCTL_SAMP_SIZE_MASK != 512:
        m.write32(regs.RTSCMISC, 0x20020)
        m.write32(regs.RTPKRRNG, 570)
        m.write32(regs.RTPKRMAX, 1600)
        m.write32(regs.RTSCML, 122 << 16 | 317)
        limits = ((80, 107), (57, 62), (39, 39), (27, 26), (19, 18), (18, 17))
        for reg, (hi, lo) in zip(regs.RTSCRL, limits, strict=True):
            m.write32(reg, hi << 16 | lo)
    ctl = m.read32(regs.RTMCTL) & ~(regs.RTMCTL_PRGM | regs.RTMCTL_ACC | 0x3)
    m.write32(regs.RTMCTL, ctl | regs.RTMCTL_SAMP_MODE_RAW_ES_SC)


def instantiate_rng(model: CaamModel, deco: Deco0, *, gen_sk: bool) -> int:
    """ctrl.c instantiate_rng for handles 0 and 1: 0, or EAGAIN when a handle did not take."""
    for sh in (0, 1):
        want = (regs.RDSTA_IF0 | regs.RDSTA_PR0) << sh
        rdsta = model.read32(regs.RDSTA)
        if rdsta & want == want:
            continue
        torn_down = rdsta & regs.RDSTA_IF0 << sh  # instantiated without PR: tear it down first
        if torn_down and deco.run(deinstantiation_desc(sh)) not in DECO_OK:
            return EAGAIN
        if deco.run(instantiation_desc(sh, gen_sk)) not in DECO_OK:
            return EAGAIN
        if model.read32(regs.RDSTA) & want != want:
            return EAGAIN
    return 0


def probe_rng(model: CaamModel, *, virt: bool = False) -> tuple[int, int]:
    """ctrl.c caam_ctrl_rng_init: (result, handles this probe instantiated)."""
    deco = Deco0(model, virt=virt)
    rdsta = model.read32(regs.RDSTA)
    initial = rdsta & regs.RDSTA_MASK
    gen_sk = not rdsta & regs.RDSTA_SKVN
    ent_delay, ret = 3200, EAGAIN
    while ret == EAGAIN and ent_delay < 12800:
        if not model.read32(regs.RDSTA) & regs.RDSTA_MASK:
            kick_trng(model, ent_delay)
            ent_delay *= 2
        ret = instantiate_rng(model, deco, gen_sk=gen_sk)
    if ret == 0:
        model.write32(regs.SCFGR, model.read32(regs.SCFGR) | regs.SCFGR_RDBENABLE)
    return ret, ~initial & regs.RDSTA_MASK


def deinstantiate_rng(model: CaamModel, handles: int) -> int:
    """ctrl.c deinstantiate_rng: uninstantiate the handles this driver instantiated."""
    deco = Deco0(model)
    for sh in (0, 1):
        mine = handles & regs.RDSTA_IF0 << sh
        if mine and deco.run(deinstantiation_desc(sh)) not in DECO_OK:
            return EAGAIN
    return 0


class Ring:
    """Job ring 0 of ``model`` through the project's one driver, as jr.c drives it: a job on the
    ring, its completion reaped; DMA buffers from the driver."""

    def __init__(self, model: CaamModel, depth: int = 8) -> None:
        self.model = model
        self.driver = Driver(ModelTransport(model), depth=depth)
        self.order = self.driver.byteorder
        self.ptr = self.driver.pointer_size

    def pointer(self, addr: int) -> list[int]:
        """A pointer as descriptor words (two, most significant first, with long pointers)."""
        return self.driver.pointer(addr)

    def buf(self, data: bytes | int) -> int:
        """A DMA buffer holding ``data`` (or that many zero bytes)."""
        return self.driver.alloc(data) if isinstance(data, int) else self.driver.put(data)

    def read(self, addr: int, n: int) -> bytes:
        return self.driver.read(addr, n)

    def submit(self, words: Sequence[int]) -> Job:
        """Put one job descriptor on the ring; its completion is reaped by ``poll`` or ``wait``."""
        return self.driver.submit(words)

    def poll(self) -> int:
        """Reap what has completed; how many jobs."""
        return self.driver.poll()

    def run(self, words: Sequence[int]) -> int:
        """Run one job descriptor; returns its status word."""
        return self.driver.run(words)


def words_of(data: bytes, order: str) -> list[int]:
    """Immediate data as descriptor words (padded to whole words, memory order kept)."""
    return from_bytes(data + bytes(-len(data) % 4), order)


def blob_desc(
    ring: Ring, keymod: bytes, src: int, in_len: int, dst: int, out_len: int, *, encap: bool
) -> list[int]:
    """blob_gen.c caam_process_blob: KEY class 2 IMM keymod, SEQ IN/OUT (16-bit), OPERATION."""
    body = [0x04800000 | len(keymod), *words_of(keymod, ring.order)]
    body += [0xF0000000 | in_len, *ring.pointer(src), 0xF8000000 | out_len, *ring.pointer(dst)]
    body.append(0x870D0000 if encap else 0x860D0000)
    return [header(len(body) + 1), *body]


def op_index(words: Sequence[int]) -> int:
    """The index of the last word (where blob_desc puts the OPERATION)."""
    return len(words) - 1
