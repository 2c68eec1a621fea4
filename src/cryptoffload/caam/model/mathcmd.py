"""The MATH command: its sources and destination read and written in the job's state.

The arithmetic and the registers are :mod:`cryptoffload.caam.model.math`'s; the semantics chosen
where no public source says are listed there."""

from __future__ import annotations

from cryptoffload.caam import status
from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.words import Command
from cryptoffload.caam.model.dma import JobStop
from cryptoffload.caam.model.job import DECO_INVALID_MATH, JobState
from cryptoffload.caam.model.math import LENGTH_MASK, compute

__all__ = ["run_math"]


def run_math(state: JobState, c: Command) -> None:
    """Execute one MATH command on the job's registers."""
    f = c.fields
    length = f["length"]
    function = f["function_name"]
    if length not in E.MATH_LENGTHS or function == "unknown":
        raise _invalid(c)
    a = _source(state, c, f["src0_name"], f.get("src0_imm"))
    b = _source(state, c, f["src1_name"], f.get("src1_imm"))
    result, flags = compute(function, a, b, length, state.math.flags.c)
    _destination(state, c, f["dest_name"], result)
    if not f["nfu"]:
        state.math.flags = flags


def _source(state: JobState, c: Command, name: str, imm: int | None) -> int:
    if name.startswith("MATH"):
        return state.math.regs[int(name[4])]
    values = {
        "IMM": imm,
        "DPOVRD": state.dpovrd,
        "SEQINLEN": state.seq_in.remaining,
        "SEQOUTLEN": state.seq_out.remaining,
        "VARSEQINLEN": state.vsil,
        "VARSEQOUTLEN": state.vsol,
        "ZERO": 0,
        "ONE": 1,
    }
    value = values.get(name)
    if value is None:  # INFIFO, OUTFIFO, JOBSRC, unknown codes
        raise _invalid(c)
    return value


def _destination(state: JobState, c: Command, name: str, value: int) -> None:
    if name.startswith("MATH"):
        state.math.regs[int(name[4])] = value
    elif name == "DPOVRD":
        state.dpovrd = value & LENGTH_MASK
    elif name == "SEQINLEN":
        state.seq_in.set_remaining(value & LENGTH_MASK)
    elif name == "SEQOUTLEN":
        state.seq_out.set_remaining(value & LENGTH_MASK)
    elif name == "VARSEQINLEN":
        state.vsil = value & LENGTH_MASK
    elif name == "VARSEQOUTLEN":
        state.vsol = value & LENGTH_MASK
    elif name != "NONE":
        raise _invalid(c)


def _invalid(c: Command) -> JobStop:
    return JobStop(status.deco(DECO_INVALID_MATH, c.index))
