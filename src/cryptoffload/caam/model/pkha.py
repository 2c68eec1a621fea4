"""The CAAM model's PKHA: modular arithmetic on its A, B, N, E registers; protocols re-exported."""

from __future__ import annotations

from dataclasses import dataclass

import gmpy2

from cryptoffload.caam import status
from cryptoffload.caam.model.protocols import ProtocolContext, run_protocol

__all__ = [
    "CLEARMEM",
    "EXPO",
    "FLAG_OUT_A",
    "INV",
    "MOD_ADD",
    "MULT",
    "REDUCT",
    "SUB_AB",
    "SUB_BA",
    "PkhaRegisters",
    "ProtocolContext",
    "run_pkha",
    "run_protocol",
]

# Function numbers, bits 5:0 of a PKHA OPERATION word.
CLEARMEM = 0x1
MOD_ADD = 0x2
SUB_AB = 0x3
SUB_BA = 0x4
MULT = 0x5
EXPO = 0x6
REDUCT = 0x7
INV = 0x8
FUNCTION_MASK = 0x3F

# Flags of the modular-arithmetic functions.
FLAG_IN_MONTY = 0x80000
FLAG_OUT_MONTY = 0x40000
FLAG_F2M = 0x20000
FLAG_R2_IN = 0x10000
FLAG_TIME_EQ = 0x400
FLAG_OUT_A = 0x100

# CLEARMEM selects registers with the same bits the arithmetic functions use as flags.
CLEAR_A = 0x80000
CLEAR_B = 0x40000
CLEAR_E = 0x20000
CLEAR_N = 0x10000

_FLAG_BITS = 0xFFFC0  # bits 19:6: everything of the mode field above the function number

#: The PKHA's registers hold 4096-bit operands.
MAX_OPERAND_BYTES = 512


@dataclass
class PkhaRegisters:
    """The PKHA's A, B, N and E registers, each a big-endian byte string (empty when unset)."""

    a: bytes = b""
    b: bytes = b""
    n: bytes = b""
    e: bytes = b""

    def __repr__(self) -> str:
        # Register contents can be key material (E holds private exponents): lengths only.
        return (
            f"PkhaRegisters(a={len(self.a)} B, b={len(self.b)} B, "
            f"n={len(self.n)} B, e={len(self.e)} B)"
        )


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _error(err: int, index: int) -> int:
    return status.ccb(status.CHA_PK, err, index)


def run_pkha(function: int, flags: int, regs: PkhaRegisters, *, index: int) -> int:
    """Run one PKHA function on ``regs`` in place; returns the status word (0 on success).

    ``function`` is the function number (bits 5:0 of the OPERATION word; higher bits passed
    here are read as flags too) and ``flags`` the mode bits (OUT_A, IN/OUT_MONTY, F2M, ...).
    Results are written to B (to A with OUT_A), left-padded to the length of N, as the
    PKHA's registers are as wide as the modulus.

    Choices where the public sources stop (each returns a CCB status with CHA PK):
    - An operand longer than the PKHA's 512-byte registers: N DATASIZ, A PKAMEMSZ, B PKBMEMSZ
      (two-operand functions), E KEYSIZ (EXPO); the RM is said to name errors 2 and 3 "N / E
      memory size" for the PKHA, not confirmed. Without the limit a 64 KiB modulus would take
      the model minutes, where the hardware refuses it.
    - N empty or zero: PKDIVZRO, for every function but CLEARMEM.
    - An even N for MULT and EXPO: PKMODEVN. The hardware computes these in Montgomery form,
      which needs an odd modulus; MOD_ADD, SUB, REDUCT and INV accept an even N.
    - A >= N for MOD_ADD, SUB_AB, SUB_BA, MULT, EXPO, INV: PKAMEMSZ; B >= N for the two-operand
      functions: PKBMEMSZ. The hardware requires reduced operands and would otherwise return an
      unreduced value; the model refuses instead of guessing it. REDUCT takes any A.
    - INV of a value with no inverse (gcd(A, N) != 1): PKDIVZRO.
    - Functions the model does not carry (ECC_ADD .. PRIMALITY, copy functions) and the flags
      IN_MONTY, OUT_MONTY, R2_IN and F2M (Montgomery-form and binary-field operands): MODE.
      TIME_EQ (equal-time execution) changes only timing and is accepted.
    """
    flags = (flags | function) & _FLAG_BITS
    function &= FUNCTION_MASK

    if function == CLEARMEM:
        chosen = flags & (CLEAR_A | CLEAR_B | CLEAR_E | CLEAR_N)
        if not chosen:
            chosen = CLEAR_A | CLEAR_B | CLEAR_E | CLEAR_N
        if chosen & CLEAR_A:
            regs.a = b""
        if chosen & CLEAR_B:
            regs.b = b""
        if chosen & CLEAR_E:
            regs.e = b""
        if chosen & CLEAR_N:
            regs.n = b""
        return status.OK

    if function not in (MOD_ADD, SUB_AB, SUB_BA, MULT, EXPO, REDUCT, INV):
        return _error(status.ERR_MODE, index)
    if flags & (FLAG_IN_MONTY | FLAG_OUT_MONTY | FLAG_R2_IN | FLAG_F2M):
        return _error(status.ERR_MODE, index)

    too_long = {
        status.ERR_DATASIZ: regs.n,
        status.ERR_PKAMEMSZ: regs.a,
        status.ERR_PKBMEMSZ: regs.b if function in (MOD_ADD, SUB_AB, SUB_BA, MULT) else b"",
        status.ERR_KEYSIZ: regs.e if function == EXPO else b"",
    }
    for err, value in too_long.items():
        if len(value) > MAX_OPERAND_BYTES:
            return _error(err, index)

    n = _int(regs.n)
    if n == 0:
        return _error(status.ERR_PKDIVZRO, index)
    if function in (MULT, EXPO) and n % 2 == 0:
        return _error(status.ERR_PKMODEVN, index)
    a = _int(regs.a)
    b = _int(regs.b)
    if function != REDUCT and a >= n:
        return _error(status.ERR_PKAMEMSZ, index)
    if function in (MOD_ADD, SUB_AB, SUB_BA, MULT) and b >= n:
        return _error(status.ERR_PKBMEMSZ, index)

    if function == MOD_ADD:
        result = (a + b) % n
    elif function == SUB_AB:
        result = (a - b) % n
    elif function == SUB_BA:
        result = (b - a) % n
    elif function == MULT:
        result = a * b % n
    elif function == EXPO:
        result = int(gmpy2.powmod(a, _int(regs.e), n))
    elif function == REDUCT:
        result = a % n
    else:  # INV
        if gmpy2.gcd(a, n) != 1:
            return _error(status.ERR_PKDIVZRO, index)
        result = int(gmpy2.invert(a, n)) % n

    out = result.to_bytes(len(regs.n), "big")
    if flags & FLAG_OUT_A:
        regs.a = out
    else:
        regs.b = out
    return status.OK
