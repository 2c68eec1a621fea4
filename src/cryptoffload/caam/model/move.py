"""MOVE and MOVE_LEN: bytes between the class contexts, the output FIFO, the MATH registers, the
descriptor buffer, the key registers and the class input FIFOs, inside the DECO.

Which side the offset applies to (DPDK's RTA, notes §1.10): a context's offset is the source's,
except towards the descriptor buffer; from the output FIFO it is the destination's; from the
descriptor buffer the source's; from a MATH register the source's towards a FIFO, else the
destination's. The descriptor buffer is byte-addressed, words most significant byte first, the
shared descriptor at byte 0 (what Linux's ``set_move_tgt_here`` assumes). MATH0..MATH3 read as
32 bytes one after the other. MOVE_LEN takes its length from a MATH register.

Choices where the sources stop: WAITCOMP and AUX change nothing in a model that runs each
command to its end; data moved into a class input FIFO is message data (class 1 needs its
OPERATION first); a MOVE from the output FIFO waits for bytes no FIFO STORE has claimed, and
when there are too few the DECO stalls (watchdog, 0x1C). The input-FIFO and AUX sources, a
move past the end of a register, and unknown codes: DECO 0x0C (invalid MOVE).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cryptoffload.caam import status
from cryptoffload.caam.desc.words import Command
from cryptoffload.caam.model.cha import ChaError
from cryptoffload.caam.model.dma import DECO_WATCHDOG, JobStop

if TYPE_CHECKING:
    from cryptoffload.caam.model.job import JobState

__all__ = ["run_move"]

DECO_INVALID_MOVE = 0x0C
KEY_BYTES = 128
_CONTEXTS = {"CLASS1CTX": 1, "CLASS2CTX": 2}
_FIFOS = {"OUTFIFO", "CLASS1INFIFO", "CLASS2INFIFO", "INFIFO_NOINFO", "PK_A"}


def run_move(state: JobState, c: Command) -> None:
    """Execute one MOVE or MOVE_LEN."""
    f = c.fields
    src, dest = f["src_name"], f["dest_name"]
    length = state.math.regs[int(f["length_reg"][4])] if c.name == "MOVE_LEN" else f["length"]
    if length > len(state.descbuf):
        raise _invalid(c)
    on_source = _offset_on_source(src, dest)
    src_offset, dest_offset = (f["offset"], 0) if on_source else (0, f["offset"])
    data = _read(state, c, src, src_offset, length)
    _write(state, c, dest, dest_offset, data)


def _offset_on_source(src: str, dest: str) -> bool:
    if src in _CONTEXTS:
        return dest != "DESCBUF"
    if src == "OUTFIFO":
        return False
    if src == "DESCBUF":
        return True
    if src.startswith("MATH"):
        return dest in _FIFOS
    return False


def _read(state: JobState, c: Command, src: str, offset: int, n: int) -> bytes:
    data: bytes | None = None
    if src in _CONTEXTS:
        ctx = state.contexts[_CONTEXTS[src]]
        if offset + n <= len(ctx):
            data = bytes(ctx[offset : offset + n])
    elif src == "OUTFIFO":
        data = state.out.take(n)
        if data is None:
            raise JobStop(status.deco(DECO_WATCHDOG, c.index))
    elif src == "DESCBUF":
        if offset + n <= len(state.descbuf):
            data = bytes(state.descbuf[offset : offset + n])
    elif src.startswith("MATH"):
        data = state.math.read(8 * int(src[4]) + offset, n)
    if data is None:
        raise _invalid(c)
    return data


def _write(state: JobState, c: Command, dest: str, offset: int, data: bytes) -> None:
    end = offset + len(data)
    if dest in _CONTEXTS:
        ctx = state.contexts[_CONTEXTS[dest]]
        if end > len(ctx):
            raise _invalid(c)
        ctx[offset:end] = data
    elif dest == "OUTFIFO":
        state.out.push(data)
    elif dest == "DESCBUF":
        if end > len(state.descbuf):
            raise _invalid(c)
        state.descbuf[offset:end] = data
    elif dest.startswith("MATH"):
        if not state.math.write(8 * int(dest[4]) + offset, data):
            raise _invalid(c)
    elif dest in ("CLASS1KEY", "CLASS2KEY"):
        cls = 1 if dest == "CLASS1KEY" else 2
        if end > KEY_BYTES:
            raise _invalid(c)
        key = bytearray(state.keys[cls].ljust(end, b"\0"))
        key[offset:end] = data
        state.keys[cls] = bytes(key)
    elif dest == "PK_A":
        state.pk.a = data
    elif dest == "CLASS1INFIFO" and state.c1 is not None:
        aes = state.c1
        _feed(c, lambda: state.out.push(aes.feed("msg", data)))
    elif dest == "CLASS2INFIFO" and state.c2 is not None:
        md = state.c2
        _feed(c, lambda: md.feed("msg", data))
    else:
        raise _invalid(c)


def _feed(c: Command, run: Callable[[], object]) -> None:
    try:
        run()
    except ChaError as err:
        raise JobStop(err.status(c.index)) from None


def _invalid(c: Command) -> JobStop:
    return JobStop(status.deco(DECO_INVALID_MOVE, c.index))
