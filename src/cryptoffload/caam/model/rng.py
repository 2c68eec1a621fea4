"""RNG4 of the CAAM model: two state handles that software must instantiate before generating.

Each state handle is a deterministic DRBG (the project's AES-256 CTR_DRBG; the real RNG4 runs a
hash DRBG, which software cannot tell apart) seeded at instantiation from the OS, or from the
``seed`` given to the model so that tests see repeatable bytes.
"""

from __future__ import annotations

import hashlib
import os

from cryptoffload.blocks.ctr_drbg import MAX_REQUEST_BYTES, CtrDrbg
from cryptoffload.caam import status

__all__ = ["HANDLES", "RDSTA_IF0", "RDSTA_IF1", "RNG_ERR_INSTANTIATE", "Rng4"]

#: State handles of an RNG4 (SH0 and SH1).
HANDLES = 2
#: RDSTA bits: state handle 0 / 1 instantiated.
RDSTA_IF0 = 0x1
RDSTA_IF1 = 0x2
#: RNG error id 3 ("Instantiate" in Linux's error.c): what a failed instantiation reports.
RNG_ERR_INSTANTIATE = 0x3

_ENTROPY_BYTES = 48


class Rng4:
    """The RNG4 block: state handles 0 and 1, none instantiated at reset (RDSTA reads 0)."""

    def __init__(self, seed: bytes | None = None) -> None:
        self._seed = None if seed is None else bytes(seed)
        self._instantiations = 0
        self._handles: dict[int, CtrDrbg] = {}
        #: Fault injection: the next instantiate fails once (CCB RNG instantiate error).
        self.fail_next_instantiate = False

    def __repr__(self) -> str:
        return f"<Rng4 rdsta=0x{self.rdsta():x}>"

    def is_instantiated(self, handle: int) -> bool:
        """Whether state handle ``handle`` has been instantiated since the last reset."""
        return handle in self._handles

    def rdsta(self) -> int:
        """The RDSTA register's IF bits: IF0 0x1 and IF1 0x2 for the instantiated handles."""
        return sum(1 << handle for handle in self._handles)

    def _entropy(self, handle: int) -> bytes:
        if self._seed is None:
            return os.urandom(_ENTROPY_BYTES)
        label = b"rng4|%d|%d|" % (handle, self._instantiations)
        return hashlib.shake_256(label + self._seed).digest(_ENTROPY_BYTES)

    def instantiate(self, handle: int, *, index: int) -> int:
        """Instantiate ``handle``; returns the status word the OPERATION at ``index`` reports.

        An out-of-range handle, a handle already instantiated and an injected failure all report
        CCB RNG error 3 ("Instantiate"), and leave the handle as it was.
        """
        failing = self.fail_next_instantiate
        self.fail_next_instantiate = False
        if failing or not 0 <= handle < HANDLES or handle in self._handles:
            return status.ccb(status.CHA_RNG, RNG_ERR_INSTANTIATE, index)
        self._instantiations += 1
        self._handles[handle] = CtrDrbg(self._entropy(handle), personalization=b"caam-rng4")
        return status.OK

    def uninstantiate(self, handle: int) -> bool:
        """Forget ``handle``'s state; returns whether it was instantiated."""
        return self._handles.pop(handle, None) is not None

    def generate(self, n: int, handle: int = 0) -> bytes:
        """``n`` random bytes from ``handle``; the caller checks that it is instantiated."""
        drbg = self._handles.get(handle)
        if drbg is None:
            raise RuntimeError(f"RNG4 state handle {handle} is not instantiated")
        out = bytearray()
        while len(out) < n:
            if drbg.needs_reseed:
                drbg.reseed(self._entropy(handle))
            out += drbg.generate(min(n - len(out), MAX_REQUEST_BYTES))
        return bytes(out)

    def reset(self) -> None:
        """Back to the reset state: no handle instantiated, no failure pending."""
        self._handles.clear()
        self.fail_next_instantiate = False
