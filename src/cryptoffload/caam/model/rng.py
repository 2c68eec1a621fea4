"""RNG4 of the CAAM model: two state handles, prediction resistance, secure keys, and RDSTA.

Each state handle is a deterministic DRBG (the project's AES-256 CTR_DRBG; the real RNG4 runs a
hash DRBG, which software cannot tell apart) seeded at instantiation from the OS, or from the
``seed`` given to the model so that tests see repeatable bytes.

The RNG OPERATION (class 1, ALGSEL 0x50) as Linux drives it (ctrl.c, caamrng.c, caamprng.c):
AAI bit 0 picks state handle 0 or 1, AAI 0x100 (SK) asks for the secure keys, the state field is
0 generate, 1 instantiate, 2 reseed, 3 uninstantiate, and bit 1 asks for prediction resistance.
RDSTA (0x6C0) reads IF0/IF1 (bits 0/1) for the instantiated handles, PR0/PR1 (bits 4/5) for those
instantiated with prediction resistance, and SKVN (bit 30) once the secure keys exist.

Status words (CCB, CHA RNG 5, with the RNG's error ids from Linux's error.c; the condition each
one stands for is the model's reading of the error's name where the manuals are not public):
- instantiate a handle already instantiated (or an injected failure): 0x53 "Instantiate";
- generate, reseed or SK on a handle not instantiated: 0x54 "Not instantiated";
- generate or reseed with prediction resistance on a handle instantiated without it: 0x56
  "Prediction resistance" (inferred: Linux deinstantiates such handles and instantiates them
  again with PR before using PR);
- uninstantiate a handle that is not instantiated: 0x58 "Uninstantiate" (inferred);
- SK when the secure keys already exist: 0x59 "Secure key generation" (inferred: the keys are
  made once per reset).
A generate with prediction resistance reseeds the handle from fresh entropy first. Uninstantiate
leaves the secure keys (and SKVN) in place; a reset clears everything but the master key.
Personalization strings and additional input (AAI PS 0x40, AI 0x80) are accepted and not used.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from cryptoffload.blocks.ctr_drbg import MAX_REQUEST_BYTES, CtrDrbg
from cryptoffload.caam import status
from cryptoffload.caam.model.keys import DeviceKeys

__all__ = [
    "HANDLES",
    "RDSTA_IF0",
    "RDSTA_IF1",
    "RDSTA_PR0",
    "RDSTA_PR1",
    "RDSTA_SKVN",
    "RNG_ERR_INSTANTIATE",
    "Rng4",
]

#: State handles of an RNG4 (SH0 and SH1).
HANDLES = 2
#: RDSTA bits: state handle n instantiated (IFn), instantiated with prediction resistance (PRn),
#: secure keys valid (SKVN; SKVT, bit 31, is the test-mode twin the model never sets).
RDSTA_IF0 = 0x1
RDSTA_IF1 = 0x2
RDSTA_PR0 = 0x10
RDSTA_PR1 = 0x20
RDSTA_SKVN = 0x4000_0000
RDSTA_SKVT = 0x8000_0000
#: RNG error id 3 ("Instantiate" in Linux's error.c): what a failed instantiation reports.
RNG_ERR_INSTANTIATE = status.ERR_RNG_INSTANTIATE

# The OPERATION's fields for the RNG.
STATE_GENERATE = 0
STATE_INSTANTIATE = 1
STATE_RESEED = 2
STATE_UNINSTANTIATE = 3
AAI_HANDLE = 0x1
AAI_SK = 0x100

_ENTROPY_BYTES = 48


@dataclass
class _Handle:
    drbg: CtrDrbg
    prediction_resistance: bool


class Rng4:
    """The RNG4 block: state handles 0 and 1, none instantiated at reset (RDSTA reads 0)."""

    def __init__(self, seed: bytes | None = None, keys: DeviceKeys | None = None) -> None:
        self._seed = None if seed is None else bytes(seed)
        self._draws = 0
        self._handles: dict[int, _Handle] = {}
        #: The device's master key and the secure keys SK makes (RDSTA.SKVN).
        self.keys = keys if keys is not None else DeviceKeys(seed)
        #: Fault injection: the next instantiate fails once (CCB RNG instantiate error).
        self.fail_next_instantiate = False

    def __repr__(self) -> str:
        return f"<Rng4 rdsta=0x{self.rdsta():x}>"

    def is_instantiated(self, handle: int) -> bool:
        """Whether state handle ``handle`` has been instantiated since the last reset."""
        return handle in self._handles

    def has_prediction_resistance(self, handle: int) -> bool:
        """Whether ``handle`` is instantiated with prediction resistance."""
        state = self._handles.get(handle)
        return state is not None and state.prediction_resistance

    def rdsta(self) -> int:
        """The RDSTA register: IF0/IF1, PR0/PR1 and SKVN."""
        value = 0
        for handle, state in self._handles.items():
            value |= RDSTA_IF0 << handle
            if state.prediction_resistance:
                value |= RDSTA_PR0 << handle
        if self.keys.secure_keys_valid:
            value |= RDSTA_SKVN
        return value

    def _entropy(self, handle: int) -> bytes:
        self._draws += 1
        if self._seed is None:
            return os.urandom(_ENTROPY_BYTES)
        label = b"rng4|%d|%d|" % (handle, self._draws)
        return hashlib.shake_256(label + self._seed).digest(_ENTROPY_BYTES)

    def _error(self, error: int, index: int) -> int:
        return status.ccb(status.CHA_RNG, error, index)

    def instantiate(self, handle: int, *, index: int, prediction_resistance: bool = False) -> int:
        """Instantiate ``handle``; returns the status word the OPERATION at ``index`` reports.

        An out-of-range handle, a handle already instantiated and an injected failure all report
        CCB RNG error 3 ("Instantiate"), and leave the handle as it was.
        """
        failing = self.fail_next_instantiate
        self.fail_next_instantiate = False
        if failing or not 0 <= handle < HANDLES or handle in self._handles:
            return self._error(status.ERR_RNG_INSTANTIATE, index)
        drbg = CtrDrbg(self._entropy(handle), personalization=b"caam-rng4")
        self._handles[handle] = _Handle(drbg, prediction_resistance)
        return status.OK

    def uninstantiate(self, handle: int) -> bool:
        """Forget ``handle``'s state; returns whether it was instantiated."""
        return self._handles.pop(handle, None) is not None

    def reseed(self, handle: int) -> None:
        """Reseed ``handle`` from fresh entropy; the caller checks that it is instantiated."""
        self._handles[handle].drbg.reseed(self._entropy(handle))

    def operation(self, aai: int, state: int, prediction_resistance: bool, *, index: int) -> int:
        """Run one RNG OPERATION (fields as decoded); returns its status word."""
        handle = aai & AAI_HANDLE
        pr = bool(prediction_resistance)
        if state == STATE_INSTANTIATE:
            return self.instantiate(handle, index=index, prediction_resistance=pr)
        if state == STATE_UNINSTANTIATE:
            if not self.uninstantiate(handle):
                return self._error(status.ERR_RNG_UNINSTANTIATE, index)
            return status.OK
        if handle not in self._handles:
            return self._error(status.ERR_RNG_NOT_INSTANTIATED, index)
        if pr and not self._handles[handle].prediction_resistance:
            return self._error(status.ERR_RNG_PREDICTION_RESISTANCE, index)
        if state == STATE_GENERATE and aai & AAI_SK:
            if not self.keys.generate_secure_keys(lambda n: self.generate(n, handle)):
                return self._error(status.ERR_RNG_SECURE_KEYS, index)
        elif pr or state == STATE_RESEED:
            self.reseed(handle)
        return status.OK

    def generate(self, n: int, handle: int = 0) -> bytes:
        """``n`` random bytes from ``handle``; the caller checks that it is instantiated."""
        state = self._handles.get(handle)
        if state is None:
            raise RuntimeError(f"RNG4 state handle {handle} is not instantiated")
        drbg = state.drbg
        out = bytearray()
        while len(out) < n:
            if drbg.needs_reseed:
                drbg.reseed(self._entropy(handle))
            out += drbg.generate(min(n - len(out), MAX_REQUEST_BYTES))
        return bytes(out)

    def reset(self) -> None:
        """Back to the reset state: no handle instantiated, no secure keys, no failure pending."""
        self._handles.clear()
        self.keys.reset()
        self.fail_next_instantiate = False
