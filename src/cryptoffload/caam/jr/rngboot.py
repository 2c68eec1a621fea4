"""RNG4 bring-up through the driver's ring: instantiate state handle 0, retry with more entropy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from cryptoffload.caam import regs
from cryptoffload.caam.jr.jobs import FLUSHED, CaamError

__all__ = [
    "ENTROPY_DELAYS",
    "RNG_INSTANTIATE",
    "RNG_INSTANTIATE_NO_SK",
    "SAMPLE_SIZE",
    "ensure",
    "kick_trng",
]


class Ring(Protocol):
    """What the bring-up needs of the driver: its name, its transport's registers, a job run."""

    name: str
    transport: Any

    def run(self, words: Sequence[int], **kwargs: Any) -> int: ...


#: The brief's RNG4 instantiate recipe for state handle 0, secure keys included.
RNG_INSTANTIATE = (
    0xB0800007,
    0x82500004,  # RNG, state INIT, handle 0
    0xA2000001,  # JUMP: wait for class 1 done
    0x10880004,  # LOAD immediate Clear-Written
    0x00000001,
    0x82501000,  # RNG, secure key generation
    0xA2800000,  # HALT
)
#: The same without the secure keys, for a block whose keys are already valid (RDSTA.SKVN).
RNG_INSTANTIATE_NO_SK = (0xB0800003, 0x82500004, 0xA2800000)
#: Entropy delays (RTSDCTL) for the retries after a failed instantiation, as Linux's kick_trng.
ENTROPY_DELAYS = (3200, 6400, 12800)
SAMPLE_SIZE = 512


def ensure(driver: Ring) -> bool:
    """Instantiate state handle 0 unless RDSTA says it is: the recipe through the ring, then,
    while RDSTA still says no, the TRNG reprogrammed with a longer entropy delay and the recipe
    again. True when this call instantiated it; CaamError (the last status) when no try did."""
    read32 = driver.transport.read32
    rdsta = read32(regs.RDSTA)
    if rdsta & regs.RDSTA_IF0:
        return False
    desc = RNG_INSTANTIATE_NO_SK if rdsta & regs.RDSTA_SKVN else RNG_INSTANTIATE
    word = 0
    for attempt in range(1 + len(ENTROPY_DELAYS)):
        if attempt:
            kick_trng(driver, ENTROPY_DELAYS[attempt - 1])
        word = driver.run(desc)
        rdsta = read32(regs.RDSTA)
        if rdsta & regs.RDSTA_IF0:
            return True
    raise CaamError(
        word or FLUSHED,
        f"{driver.name}: RNG4 state handle 0 not instantiated after "
        f"{1 + len(ENTROPY_DELAYS)} attempts (RDSTA 0x{rdsta:08x})",
    )


def kick_trng(driver: Ring, ent_delay: int) -> None:
    """Program mode; entropy delay and sample size (RTSDCTL); frequency limits; run mode."""
    read, write = driver.transport.read32, driver.transport.write32
    write(regs.RTMCTL, read(regs.RTMCTL) | regs.RTMCTL_PRGM | regs.RTMCTL_ACC)
    write(regs.RTSDCTL, ent_delay << regs.RTSDCTL_ENT_DLY_SHIFT | SAMPLE_SIZE)
    write(regs.RTFRQMIN, ent_delay >> 2)
    write(regs.RTFRQMAX, 1 << 20)
    ctl = read(regs.RTMCTL) & ~(regs.RTMCTL_PRGM | regs.RTMCTL_ACC | regs.RTMCTL_SAMP_MODE_MASK)
    write(regs.RTMCTL, ctl | regs.RTMCTL_SAMP_MODE_RAW_ES_SC)
