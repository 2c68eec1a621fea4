"""One DECO running one job: fetch its descriptors, run them command by command, report the status.

Fetch and layout (notes §3.1): a job header with SHARED (bit 12) is followed by a pointer to a
shared descriptor of ``shlen`` words (bits 21:16); the DECO fetches it, places it at word 0 of
its 64-word descriptor buffer and the job descriptor after it. With REVERSE the job's commands
(after the pointer) run first, then the shared descriptor's (from its start index: words 1..start
-1 are its PDB); without REVERSE the other way round. Registers, sequences, MATH flags, FIFO
data and CHA state carry across. The model never shares (each job reloads its shared
descriptor), so the JUMP conditions SHRD and SELF read false: the descriptors Linux builds then
load their keys every time, which gives the same results.

Each step decodes the command at the program counter from the descriptor buffer as it stands, so
a command MOVEd or LOADed into the buffer runs as written. Status indexes are word indexes in
the buffer, so a job command's index is shlen + its index in the job descriptor (inferred from
the layout; Linux only prints the index).

Choices where the public sources stop (each gives the status a driver would see):
- A first word that is not a job header, HDR_ONE clear, HDR_ZRO set, a length of 0 or over 64
  words, or a start index past the length: DECO header error 0x13 at index 0. The shared
  descriptor's header must be a SHR HDR with ONE set, ZRO clear and a length of 1..shlen, else
  DECO 0x12; a job and shared descriptor over 64 words together: DECO 0x13.
- JUMPs: local offsets count from the JUMP's word and must land on a command of the descriptor
  holding the JUMP, or just past its end (which ends that descriptor: the next one runs, or the
  job ends); anything else is DECO 0x0D. A NONLOCAL jump fetches the job descriptor at its
  pointer and runs it in the same DECO (keys, contexts, sequences kept); its target may not
  carry a shared descriptor (DECO 0x0D), and an error after it has status bit 27 set. The
  condition sets: MATH N/Z/C/NV (the PKHA conditions read false); with JSL, CALM, NIP, NIFP,
  NOP and NCP read true (nothing is ever pending), JQP, SHRD and SELF false. Waiting for a class
  (bits 26:25) is immediate. Later eras' jump types (gosub, return, local-inc/dec): DECO 0x0D.
- A HALT or HALT_USER whose low byte is 0 reports status 0; a non-zero low byte reports source
  3 (HALT_USER) or 7 (HALT) with the command's index and that byte.
- A backward jump taken again with every register a condition or a length can depend on as it
  was (sequences, MATH registers and flags, variable lengths, the descriptor buffer) repeats
  forever: the watchdog (DECO 0x1C) fires at once; also after 4096 commands.
- Output FIFO STOREs still unfilled when the descriptors end stall a real DECO until its
  watchdog fires: DECO 0x1C at the store's index.
- Commands the model does not run (SIGNATURE, trusted (TK) keys): the DECO "invalid <command>"
  codes of Linux's error.c. The OPERATIONs are in ``operations``, MATH in ``math``, MOVE in
  ``move``, the data paths and registers in ``job``, sequences and S/G tables in ``sequences``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from cryptoffload.caam import status
from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.decoder import PAST_LENGTH, Command, decode_at
from cryptoffload.caam.model.dma import DECO_WATCHDOG, JobStop
from cryptoffload.caam.model.job import (
    DECO_INVALID_COMMAND,
    DECO_INVALID_JUMP,
    DECO_SHARED_HEADER,
    INVALID,
    JobContext,
    fail,
)
from cryptoffload.caam.model.mathcmd import run_math
from cryptoffload.caam.model.memory import DmaError
from cryptoffload.caam.model.move import run_move
from cryptoffload.caam.model.operations import OperationCommands

__all__ = ["JobContext", "JobResult", "run_job"]

MAX_STEPS = 4096
#: Status bit 27: the error happened in a descriptor reached through a NONLOCAL jump.
STATUS_NONLOCAL = 0x0800_0000

#: JSL conditions true in a model where nothing is ever pending: CALM, NIP, NIFP, NOP, NCP.
JSL_TRUE = 0x1F


@dataclass(frozen=True)
class JobResult:
    """A finished job: its status word, the CHAs it used, and the buffers it wrote."""

    status: int
    chas: tuple[str, ...]
    outputs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Part:
    """One descriptor in the buffer: its first command and the word past its end."""

    start: int
    end: int


@dataclass(frozen=True)
class _Nonlocal:
    pointer: int


class _Deco(OperationCommands):
    """One DECO running one job: the run loop, OPERATIONs and jumps on top of the data paths."""

    nonlocal_taken = False

    # ------------------------------------------------------------------ fetch and run

    def run(self, desc_addr: int) -> int:
        try:
            self.ctx.memory.read(desc_addr, 4)
        except DmaError:
            return status.job_ring(status.JR_BAD_DESC_ADDR)
        try:
            parts = self._fetch(desc_addr, jump_index=None)
            self._execute(parts)
            self.out.check_drained()
        except JobStop as stop:
            word = stop.status
            if self.nonlocal_taken and word >> 28 in (status.SRC_CCB, status.SRC_DECO):
                word |= STATUS_NONLOCAL
            return word
        return status.OK

    def _read_words(self, addr: int, n: int, code: int, index: int) -> list[int]:
        try:
            raw = self.ctx.memory.read(addr, 4 * n)
        except DmaError:
            raise fail(code, index) from None
        return [int.from_bytes(raw[i : i + 4], self.order) for i in range(0, len(raw), 4)]

    def _fetch(self, addr: int, jump_index: int | None) -> list[_Part]:
        """Load the job descriptor at ``addr`` (and its shared descriptor) into the buffer;
        the parts to run, in order. ``jump_index``: the NONLOCAL jump that led here."""
        here = 0 if jump_index is None else jump_index
        header = self._read_words(addr, 1, status.DECO_DMA, here)[0]
        length = header & E.HDR_LENGTH_MASK
        start = (header >> E.HDR_START_SHIFT) & E.HDR_START_MASK
        if (
            header & E.OPCODE_MASK != E.CMD_DESC_HDR
            or not header & E.HDR_ONE
            or header & E.HDR_ZRO
            or not 0 < length <= E.MAX_DESCRIPTOR_WORDS
            or (start > length and not header & E.HDR_SHARED)  # with SHARED: shlen
        ):
            raise fail(status.DECO_HDRLEN if jump_index is None else DECO_INVALID_JUMP, here)
        words = self._read_words(addr, length, status.DECO_DMA, here)
        if not header & E.HDR_SHARED:
            self.pdb = tuple(words[1:start]) if start > 1 else ()
            self._load_buffer(words)
            return [_Part(max(start, 1), length)]
        if jump_index is not None:  # a NONLOCAL jump cannot reach a shared descriptor
            raise fail(DECO_INVALID_JUMP, jump_index)
        pw = 2 if self.ctx.long_pointers else 1
        if length < 1 + pw:
            raise fail(status.DECO_HDRLEN, 0)
        pointer = words[1] if pw == 1 else words[1] << 32 | words[2]
        shlen = start
        if not shlen:
            raise fail(DECO_SHARED_HEADER, 0)
        shared = self._read_words(pointer, shlen, status.DECO_DMA, 0)
        sh_header = shared[0]
        sh_length = sh_header & E.HDR_LENGTH_MASK
        sh_start = (sh_header >> E.HDR_START_SHIFT) & E.HDR_START_MASK
        if (
            sh_header & E.OPCODE_MASK != E.CMD_SHARED_HDR
            or not sh_header & E.HDR_ONE
            or sh_header & E.HDR_ZRO
            or not 0 < sh_length <= shlen
            or sh_start > sh_length
        ):
            raise fail(DECO_SHARED_HEADER, 0)
        if shlen + length > E.MAX_DESCRIPTOR_WORDS:
            raise fail(status.DECO_HDRLEN, 0)
        self.pdb = tuple(shared[1:sh_start]) if sh_start > 1 else ()
        self._load_buffer(shared + words)
        job = _Part(shlen + 1 + pw, shlen + length)
        shared_part = _Part(max(sh_start, 1), sh_length)
        return [job, shared_part] if header & E.HDR_REVERSE else [shared_part, job]

    def _load_buffer(self, words: list[int]) -> None:
        self.descbuf[:] = bytes(len(self.descbuf))
        self.descbuf[: 4 * len(words)] = b"".join(w.to_bytes(4, "big") for w in words)

    def _words(self) -> tuple[int, ...]:
        return struct.unpack(f">{len(self.descbuf) // 4}I", self.descbuf)

    def _decode(self, pos: int, end: int) -> Command:
        return decode_at(
            self._words(),
            pos,
            limit=end,
            long_pointers=self.ctx.long_pointers,
            byteorder=self.order,
        )

    def _starts(self, part: _Part) -> set[int]:
        """The word indexes where the part's commands begin, as its words now decode."""
        starts, pos = set(), part.start
        while pos < part.end:
            starts.add(pos)
            pos += len(self._decode(pos, part.end).words)
        return starts

    def _execute(self, parts: list[_Part]) -> None:
        loops: set[tuple[object, ...]] = set()
        steps = 0
        queue = list(parts)
        while queue:
            part = queue.pop(0)
            pc = part.start
            while pc < part.end:
                command = self._decode(pc, part.end)
                steps += 1
                if steps > MAX_STEPS:
                    raise fail(DECO_WATCHDOG, command.index)
                try:
                    target = self._command(command)
                except DmaError:  # a protocol's own memory access
                    raise fail(status.DECO_DMA, command.index) from None
                if target is None:
                    pc += len(command.words)
                elif isinstance(target, _Nonlocal):
                    self.nonlocal_taken = True
                    queue = self._fetch(target.pointer, jump_index=command.index)
                    break
                elif target == part.end:
                    break
                elif part.start <= target < part.end and target in self._starts(part):
                    if target <= pc:
                        mark = (pc, *self._machine_state())
                        if mark in loops:
                            raise fail(DECO_WATCHDOG, command.index)
                        loops.add(mark)
                    pc = target
                else:
                    raise fail(DECO_INVALID_JUMP, command.index)

    def _machine_state(self) -> tuple[object, ...]:
        """What the conditions and lengths of the commands to come can depend on."""
        return (
            self.seq_in.state(),
            self.seq_out.state(),
            tuple(self.math.regs),
            self.math.flags,
            self.vsil,
            self.vsol,
            self.dpovrd,
            bytes(self.descbuf),
        )

    def _command(self, c: Command) -> int | _Nonlocal | None:
        """Run one command: where a taken jump goes, or None to go on."""
        if c.name == "UNKNOWN":
            past = c.fields.get("reason") == PAST_LENGTH
            raise fail(status.DECO_HDRLEN if past else DECO_INVALID_COMMAND, c.index)
        run = _RUNS.get(c.name)
        if run is None:
            name = c.name.removeprefix("SEQ_")
            raise fail(INVALID.get(name, DECO_INVALID_COMMAND), c.index)
        return run(self, c)

    # ------------------------------------------------------------------ JUMP

    def _jump(self, c: Command) -> int | _Nonlocal | None:
        f = c.fields
        kind = f["type"]
        if kind not in ("local", "nonlocal", "halt", "halt-user"):
            raise fail(DECO_INVALID_JUMP, c.index)
        if not self._taken(f["jsl"], f["test"], f["condition"]):
            return None
        if kind == "local":
            return c.index + f["offset"]
        if kind == "nonlocal":
            return _Nonlocal(f["pointer"])
        user = f["offset"] & 0xFF
        if user == 0:
            raise JobStop(status.OK)
        source = status.SRC_JUMP_HALT_USER if kind == "halt-user" else status.SRC_JUMP_HALT_COND
        raise JobStop((source << 28) | (c.index << 8) | user)

    def _taken(self, jsl: bool, test: int, selected: int) -> bool:
        """Whether a JUMP's test holds over its selected conditions (notes §3.4)."""
        true = JSL_TRUE if jsl else self.math.flags.bits()
        true_selected, false_selected = selected & true, selected & ~true
        return {
            0: not false_selected,  # ALL: every selected condition true (none selected: true)
            1: not true_selected,  # INVALL: every selected condition false
            2: bool(true_selected),  # ANY: at least one true
            3: bool(false_selected),  # INVANY: at least one false
        }[test]


#: The method that runs each command the model executes, by the decoder's name for it.
_RUNS: dict[str, Callable[[_Deco, Command], int | _Nonlocal | None]] = {
    "SEQ_IN_PTR": _Deco._seq_ptr,
    "SEQ_OUT_PTR": _Deco._seq_ptr,
    "KEY": _Deco._key,
    "SEQ_KEY": _Deco._key,
    "LOAD": _Deco._load,
    "SEQ_LOAD": _Deco._load,
    "STORE": _Deco._store,
    "SEQ_STORE": _Deco._store,
    "FIFO_LOAD": _Deco._fifo_load,
    "SEQ_FIFO_LOAD": _Deco._fifo_load,
    "FIFO_STORE": _Deco._fifo_store,
    "SEQ_FIFO_STORE": _Deco._fifo_store,
    "OPERATION": _Deco._operation,
    "JUMP": _Deco._jump,
    "MATH": run_math,
    "MOVE": run_move,
    "MOVE_LEN": run_move,
}


def run_job(desc_addr: int, ctx: JobContext) -> JobResult:
    """Run the job descriptor at ``desc_addr``; never raises for a bad descriptor or address."""
    job = _Deco(ctx)
    result = job.run(desc_addr)
    return JobResult(result, tuple(job.chas), tuple(job.bus.writes))
