"""The DECO's MATH unit: four 64-bit registers, the N/Z/C/NV flags, and the MATH command.

``compute`` is the arithmetic alone (the property tests hold it against Python integers); the
MATH command reads its sources, computes, writes its destination and, unless NFU, the flags.

Semantics (notes §3.3; the choices where no public source says are marked):
- operands are taken at LEN bytes (1, 2, 4, 8), modulo 2**(8*LEN); the result is written at
  LEN bytes, zero-extended into a MATH register, its low 32 bits into DPOVRD and the length
  registers (SEQINLEN / SEQOUTLEN set what is left of the sequence, VARSEQINLEN /
  VARSEQOUTLEN are the variable lengths VLF commands use); NONE keeps only the flags;
- SEQINLEN / SEQOUTLEN read what the SEQ commands have left of the sequences (0 without one);
- Z: the result is 0; N: its top bit; C: the carry out of ADD/ADDC, the borrow of SUB/SUBB
  (src0 < src1, with the borrow in for SUBB); NV: signed overflow of those four (the notes'
  reading, inferred). The other functions clear C and NV (choice);
- ADDC adds the C flag, SUBB subtracts it; LSHIFT / RSHIFT shift src0 by src1 bits (0 once
  src1 reaches the width); SHLD is src0 shifted left by half the width with the top half of
  src1 shifted in, (src0 << 32 | src1 >> 32) at 8 bytes: with src0 = src1 it swaps the two
  words, as DPDK's descriptors use it (inferred); BSWAP reverses src0's LEN bytes; ZBYT
  (undocumented; choice) gives 0xFF in each byte where src0's byte is 0 and 0 elsewhere;
- an 8-byte operation with IFB takes a 4-byte immediate, zero-extended (inferred);
- the registers and flags read 0 at the start of every job (inferred, and what Linux's
  ``SIL - R0`` needs);
- an unknown function, source or destination, the FIFO and JOBSRC sources (not modelled), or a
  length other than 1, 2, 4, 8: DECO 0x0E (invalid MATH).
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptoffload.caam.desc import encoding as E

__all__ = ["FUNCTIONS", "Flags", "MathRegisters", "compute"]

REGISTERS = 4
REGISTER_BYTES = E.MATH_REGISTER_BYTES
LENGTH_MASK = 0xFFFF_FFFF
FUNCTIONS = tuple(E.MATH_FUNCTIONS.values())


@dataclass(frozen=True)
class Flags:
    """The MATH condition flags JUMP tests (JSL clear, bits 11:8)."""

    n: bool = False
    z: bool = False
    c: bool = False
    nv: bool = False

    def bits(self) -> int:
        """As JUMP condition bits: N 0x8, Z 0x4, C 0x2, NV 0x1."""
        return self.n << 3 | self.z << 2 | self.c << 1 | self.nv


def compute(function: str, a: int, b: int, length: int, carry: bool = False) -> tuple[int, Flags]:
    """``function`` of src0 ``a`` and src1 ``b`` at ``length`` bytes: (result, flags).

    ``carry`` is the C flag before the operation (ADDC adds it, SUBB subtracts it).
    """
    if length not in E.MATH_LENGTHS:
        raise ValueError(f"MATH length must be 1, 2, 4 or 8, got {length}")
    bits = 8 * length
    mask = (1 << bits) - 1
    a, b = a & mask, b & mask
    top = 1 << (bits - 1)
    c = nv = False
    if function in ("ADD", "ADDC"):
        total = a + b + (int(carry) if function == "ADDC" else 0)
        result, c = total & mask, total > mask
        nv = not (a ^ b) & top and bool((result ^ a) & top)
    elif function in ("SUB", "SUBB"):
        borrow = int(carry) if function == "SUBB" else 0
        result, c = (a - b - borrow) & mask, a < b + borrow
        nv = bool((a ^ b) & top) and bool((result ^ a) & top)
    elif function == "OR":
        result = a | b
    elif function == "AND":
        result = a & b
    elif function == "XOR":
        result = a ^ b
    elif function == "LSHIFT":
        result = (a << b) & mask if b < bits else 0
    elif function == "RSHIFT":
        result = a >> b if b < bits else 0
    elif function == "SHLD":
        half = bits // 2
        result = ((a << half) | (b >> half)) & mask
    elif function == "ZBYT":
        result = sum(0xFF << (8 * i) for i in range(length) if not (a >> (8 * i)) & 0xFF)
    elif function == "BSWAP":
        result = int.from_bytes(a.to_bytes(length, "big"), "little")
    else:
        raise ValueError(f"unknown MATH function {function!r}")
    return result, Flags(n=bool(result & top), z=result == 0, c=c, nv=nv)


class MathRegisters:
    """MATH0..MATH3 (64 bits each) and the flags; bytes are addressed most significant first,
    the four registers one after the other (LOAD, STORE and MOVE see them so)."""

    def __init__(self) -> None:
        self.regs = [0] * REGISTERS
        self.flags = Flags()

    def area(self) -> bytearray:
        return bytearray(b"".join(r.to_bytes(REGISTER_BYTES, "big") for r in self.regs))

    def read(self, offset: int, n: int) -> bytes | None:
        """``n`` bytes from ``offset``; None when they run past MATH3."""
        if offset + n > REGISTERS * REGISTER_BYTES:
            return None
        return bytes(self.area()[offset : offset + n])

    def write(self, offset: int, data: bytes) -> bool:
        """Write ``data`` at ``offset``; False (and no change) when it runs past MATH3."""
        if offset + len(data) > REGISTERS * REGISTER_BYTES:
            return False
        area = self.area()
        area[offset : offset + len(data)] = data
        for i in range(REGISTERS):
            chunk = area[i * REGISTER_BYTES : (i + 1) * REGISTER_BYTES]
            self.regs[i] = int.from_bytes(chunk, "big")
        return True
