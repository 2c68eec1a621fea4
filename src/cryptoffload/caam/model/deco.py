"""One DECO running one job descriptor: fetch it, decode it, execute it, report its status.

Choices where the public sources stop (each gives the status a driver would see):
- A first word that is not a job header, HDR_ONE clear, HDR_ZRO set, a length of 0 or over 64
  words, or a start index past the length: DECO header error 0x13 at index 0. A job header
  carrying a shared-descriptor pointer: DECO 0x12 (shared descriptors are not modelled).
- A user HALT (JUMP type HALT or HALT_USER) whose low byte is 0 reports status 0; a non-zero
  low byte reports source 3 (HALT_USER) or 7 (HALT) with the command's index and that byte.
- Jump conditions: the model keeps no MATH or PKHA condition flags, so every condition bit
  reads false (an unconditional jump has condition 0 and test ALL). A local jump to the word
  just past the descriptor ends the job; elsewhere off a command boundary: DECO 0x0D.
- A second class-1 OPERATION while the class-1 mode register is still written (not cleared
  with Clear-Written bit 0, as the RNG instantiate recipe does): CCB "class 1 CHA not reset"
  (error 0xD) with the new CHA's id.
- RNG OPERATIONs: state INIT instantiates the handle in AAI bit 0 (already instantiated or an
  injected failure: CCB RNG error 3), INITFINAL uninstantiates it, UPDATE (generate, secure key
  generation) and FINALIZE (reseed) need it instantiated, else CCB 0x54. A FIFO STORE of RNG
  data draws from the handle of the last RNG OPERATION (handle 0 without one).
- Key size errors are reported at the OPERATION, data size errors at the FIFO LOAD ending the
  stream, a GCM, CCM or HMAC ICV mismatch at the ICV FIFO LOAD (output already written).
- Output FIFO STOREs still unfilled when the descriptor ends would stall a real DECO until its
  watchdog fires: DECO 0x1C at the store's index. A jump loop: DECO 0x1C as well, when a
  backward jump is taken a second time with the sequences unmoved (conditions never change in
  the model, so the loop cannot end), or after 4096 commands.
- Class-2 hashes in several jobs: INIT or UPDATE leaves the running state (chaining value plus
  an 8-byte byte count, cha.MdUnit and mdha) in the class-2 context for a STORE; UPDATE and
  FINALIZE resume from the context a LOAD put back. A non-final piece that is not a whole
  number of blocks: CCB MD DATASIZ at the FIFO LOAD carrying LAST2.
- Commands the model does not run (MOVE, MATH, SIGNATURE, black or trusted keys, scatter/gather,
  non-local jumps, XTS, CMAC, split HMAC keys): the DECO "invalid <command>" codes of Linux's
  error.c, or CCB MODE for OPERATIONs. DES/3DES and unknown algorithms: CCB INVCHA (the model's
  parts list no DES CHA).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cryptoffload.caam import encoding as E
from cryptoffload.caam import status
from cryptoffload.caam.decoder import Command, decode
from cryptoffload.caam.model.cha import AesUnit, ChaError, MdUnit
from cryptoffload.caam.model.dma import DECO_WATCHDOG, JobStop
from cryptoffload.caam.model.job import (
    DECO_INVALID_COMMAND,
    DECO_INVALID_JUMP,
    DECO_INVALID_OPERATION,
    DECO_SHARED_HEADER,
    INVALID,
    JobContext,
    JobState,
    fail,
)
from cryptoffload.caam.model.memory import DmaError
from cryptoffload.caam.model.pkha import ProtocolContext, run_pkha, run_protocol

__all__ = ["JobContext", "JobResult", "run_job"]

MAX_STEPS = 4096

#: CCB error id 0xD: "Class 1 CHA is not reset".
ERR_CLASS1_NOT_RESET = 0xD
RNG_STATE_INSTANTIATE = 1
RNG_STATE_UNINSTANTIATE = 3
RNG_AAI_SH = 0x1  # the state handle bit of the RNG's AAI
_PAST_LENGTH = "runs past the descriptor length"


@dataclass(frozen=True)
class JobResult:
    """A finished job: its status word, the CHAs it used, and the buffers it wrote."""

    status: int
    chas: tuple[str, ...]
    outputs: tuple[tuple[int, int], ...]


class _Deco(JobState):
    """One DECO running one job: the run loop, OPERATIONs and jumps on top of the data paths."""

    # ------------------------------------------------------------------ fetch and run

    def run(self, desc_addr: int) -> int:
        try:
            head = self.ctx.memory.read(desc_addr, 4)
        except DmaError:
            return status.job_ring(status.JR_BAD_DESC_ADDR)
        header = int.from_bytes(head, self.order)
        length = header & E.HDR_LENGTH_MASK
        start = (header >> E.HDR_START_SHIFT) & E.HDR_START_MASK
        if (
            header & E.OPCODE_MASK != E.CMD_DESC_HDR
            or not header & E.HDR_ONE
            or header & E.HDR_ZRO
            or not 0 < length <= E.MAX_DESCRIPTOR_WORDS
            or start > length
        ):
            return status.deco(status.DECO_HDRLEN, 0)
        if header & E.HDR_SHARED:
            return status.deco(DECO_SHARED_HEADER, 0)
        try:
            raw = self.ctx.memory.read(desc_addr, 4 * length)
        except DmaError:
            return status.deco(status.DECO_DMA, 0)
        words = [int.from_bytes(raw[i : i + 4], self.order) for i in range(0, len(raw), 4)]
        commands = decode(words, long_pointers=self.ctx.long_pointers, byteorder=self.order)
        body = [c for c in commands[1:] if c.name != "PDB"]
        self.pdb = next((c.words for c in commands[1:2] if c.name == "PDB"), ())
        try:
            self._execute(body, length)
            self.out.check_drained()
        except JobStop as stop:
            return stop.status
        return status.OK

    def _execute(self, body: list[Command], length: int) -> None:
        where = {c.index: n for n, c in enumerate(body)}
        # The model's jump conditions never change, so a backward jump taken again with both
        # sequences where they were last time will repeat forever: the watchdog fires at once
        # instead of after MAX_STEPS (which, over a 4096-bit EXPO, took about a minute).
        loops: set[tuple[object, ...]] = set()
        pos = steps = 0
        while pos < len(body):
            command = body[pos]
            steps += 1
            if steps > MAX_STEPS:
                raise fail(DECO_WATCHDOG, command.index)
            try:
                target = self._command(command)
            except DmaError:  # a protocol's own memory access
                raise fail(status.DECO_DMA, command.index) from None
            if target is None:
                pos += 1
            elif target == length:
                return
            elif target in where:
                if where[target] <= pos:
                    mark = (pos, tuple(self.seq_in or ()), tuple(self.seq_out or ()))
                    if mark in loops:
                        raise fail(DECO_WATCHDOG, command.index)
                    loops.add(mark)
                pos = where[target]
            else:
                raise fail(DECO_INVALID_JUMP, command.index)

    def _command(self, c: Command) -> int | None:
        """Run one command: the word index a taken jump goes to, or None to go on."""
        if c.name == "UNKNOWN":
            past = c.fields.get("reason") == _PAST_LENGTH
            raise fail(status.DECO_HDRLEN if past else DECO_INVALID_COMMAND, c.index)
        run = _RUNS.get(c.name)
        if run is None:
            name = c.name.removeprefix("SEQ_")
            raise fail(INVALID.get(name, DECO_INVALID_COMMAND), c.index)
        return run(self, c)

    # ------------------------------------------------------------------ OPERATION

    def _operation(self, c: Command) -> None:
        f = c.fields
        optype = f["optype"]
        word = c.words[0]
        if optype == "class1":
            self._class1_op(c)
        elif optype == "class2":
            self.used("MD")
            try:
                self.c2 = MdUnit(
                    f["alg"],
                    f["aai"],
                    f["state"],
                    self.keys[2],
                    self.contexts[2],
                    icv_check=f["icv"],
                )
            except ChaError as err:
                raise JobStop(err.status(c.index)) from None
        elif optype == "pk" and "reason" not in f:
            self.used("PK")
            result = run_pkha(word & 0x3F, word & 0xFFFC0, self.pk, index=c.index)
            if result:
                raise JobStop(result)
        elif optype in ("protocol", "decap", "encap"):
            self.used("PK")
            rng = self.ctx.rng
            part = self.ctx.part
            pctx = ProtocolContext(
                memory=self.bus,  # type: ignore[arg-type]  # a DmaMemory that records writes
                pointer_words=2 if self.ctx.long_pointers else 1,
                byteorder=self.order,
                builtin_curves=part.builtin_curves,
                allow_prehashed_flag=part.allow_prehashed_flag,
                rng=(lambda n: rng.generate(n, 0)) if rng.is_instantiated(0) else None,
            )
            result = run_protocol(word, self.pdb, pctx, index=c.index)
            if result:
                raise JobStop(result)
        else:
            raise fail(DECO_INVALID_OPERATION, c.index)

    def _class1_op(self, c: Command) -> None:
        f = c.fields
        alg = f["alg_name"]
        if self.c1_mode is not None:
            cha = status.CHA_RNG if alg == "RNG" else status.CHA_AES
            raise JobStop(status.ccb(cha, ERR_CLASS1_NOT_RESET, c.index))
        if alg == "RNG":
            self._rng_op(c)
            return
        if alg != "AES":  # DES/3DES: the model's parts show no DES CHA (CHANUM count 0)
            cha = status.CHA_DES if alg in ("DES", "3DES") else 0
            raise JobStop(status.ccb(cha, status.ERR_INVCHA, c.index))
        self.used("AES")
        try:
            self.c1 = AesUnit(
                f["aai"], f["encrypt"], self.keys[1], self.contexts[1], icv_check=f["icv"]
            )
        except ChaError as err:
            raise JobStop(err.status(c.index)) from None
        self.c1_mode = "AES"
        waiting, self.waiting = self.waiting, []
        for early, data in waiting:
            self._class1(early, data)

    def _rng_op(self, c: Command) -> None:
        f = c.fields
        rng = self.ctx.rng
        handle = f["aai"] & RNG_AAI_SH
        self.used("RNG")
        state = f["state"]
        if state == RNG_STATE_INSTANTIATE:
            result = rng.instantiate(handle, index=c.index)
            if result:
                raise JobStop(result)
        elif not rng.is_instantiated(handle):
            raise JobStop(status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, c.index))
        elif state == RNG_STATE_UNINSTANTIATE:
            rng.uninstantiate(handle)
        self.c1_mode, self.rng_handle = "RNG", handle

    # ------------------------------------------------------------------ JUMP

    def _jump(self, c: Command) -> int | None:
        f = c.fields
        if f["type"] == "nonlocal":
            raise fail(DECO_INVALID_JUMP, c.index)
        selected = f["condition"] != 0
        # No condition flag is ever set in the model: "all true" holds only for none selected,
        # "all false" always, "any true" never, "any false" whenever one is selected.
        taken = {0: not selected, 1: True, 2: False, 3: selected}[f["test"]]
        if not taken:
            return None
        if f["type"] == "local":
            return c.index + f["offset"]
        user = f["offset"] & 0xFF
        if user == 0:
            raise JobStop(status.OK)
        source = (
            status.SRC_JUMP_HALT_USER if f["type"] == "halt-user" else status.SRC_JUMP_HALT_COND
        )
        raise JobStop((source << 28) | (c.index << 8) | user)


#: The method that runs each command the model executes, by the decoder's name for it.
_RUNS: dict[str, Callable[[_Deco, Command], int | None]] = {
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
}


def run_job(desc_addr: int, ctx: JobContext) -> JobResult:
    """Run the job descriptor at ``desc_addr``; never raises for a bad descriptor or address."""
    job = _Deco(ctx)
    result = job.run(desc_addr)
    return JobResult(result, tuple(job.chas), tuple(job.bus.writes))
