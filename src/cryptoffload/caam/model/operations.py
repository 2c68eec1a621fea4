"""The OPERATION command: class-1 AES and RNG, class-2 MDHA, PKHA functions, protocols, blobs.

Choices where the public sources stop (each gives the status a driver would see):
- A second class-1 OPERATION while the class-1 mode register is still written (not cleared
  with Clear-Written bit 0, as the RNG instantiate recipe does): CCB "class 1 CHA not reset"
  (error 0xD) with the new CHA's id.
- RNG OPERATIONs: state INIT instantiates the handle in AAI bit 0, INITFINAL uninstantiates it,
  UPDATE generates (or makes the secure keys with AAI SK), FINALIZE reseeds; bit 1 asks for
  prediction resistance (rules and statuses in ``rng``). A FIFO STORE of RNG data draws from the
  handle of the last RNG OPERATION (handle 0 without one).
- Key size errors are reported at the OPERATION, data size errors at the FIFO LOAD ending the
  stream, a GCM, CCM or HMAC ICV mismatch at the ICV FIFO LOAD (output already written).
  Class-1 data loaded before its OPERATION (the GCM job's IV) waits and is consumed when the
  OPERATION comes. AES with AAI DK: the model keeps raw key bytes, so DK changes nothing.
- AES-GCM in several jobs: INIT or UPDATE leaves the running MAC, counter, J0 and lengths in
  the class-1 context for a STORE; UPDATE and FINALIZE resume from what a LOAD put back
  (cha.AesUnit and gcm). The other AES modes take every state alike.
- Class-2 hashes in several jobs: INIT or UPDATE leaves the running state (chaining value plus
  an 8-byte byte count, cha.MdUnit and mdha) in the class-2 context for a STORE; UPDATE and
  FINALIZE resume from the context a LOAD put back. A non-final piece that is not a whole
  number of blocks: CCB MD DATASIZ at the FIFO LOAD carrying LAST2.
- BLOB encapsulation/decapsulation (PROTID 0x0D, ``blob``) and black keys (KEY with ENC/EKT,
  FIFO STORE of a key register as KEY_KEK/KEY_CCM_JKEK, ``keys``) run on flat sequences.
- What the model does not run (XTS, CMAC, split HMAC keys): CCB MODE. DES/3DES and unknown
  algorithms: CCB INVCHA (the model's parts list no DES CHA).
"""

from __future__ import annotations

from cryptoffload.caam import status
from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.words import Command
from cryptoffload.caam.model.blob import PROTID_BLOB, SequenceWindow, run_blob
from cryptoffload.caam.model.cha import AesUnit, ChaError, MdUnit
from cryptoffload.caam.model.dma import JobStop
from cryptoffload.caam.model.job import DECO_INVALID_OPERATION, JobState, fail
from cryptoffload.caam.model.pkha import ProtocolContext, run_pkha, run_protocol

__all__ = ["OperationCommands"]

#: CCB error id 0xD: "Class 1 CHA is not reset".
ERR_CLASS1_NOT_RESET = 0xD
RNG_AAI_SH = 0x1  # the state handle bit of the RNG's AAI


class OperationCommands(JobState):
    """The DECO's OPERATION command, on top of its registers and data paths."""

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
                    icv_check=f.get("icv", False),  # an RNG on class 2 has "pr" instead
                )
            except ChaError as err:
                raise JobStop(err.status(c.index)) from None
        elif optype == "pk" and "reason" not in f:
            self.used("PK")
            result = run_pkha(word & 0x3F, word & 0xFFFC0, self.pk, index=c.index)
            if result:
                raise JobStop(result)
        elif optype in ("decap", "encap") and f.get("protid") == PROTID_BLOB:
            self.used("AES")
            self._blob(c)
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

    def _blob(self, c: Command) -> None:
        """BLOB encapsulation or decapsulation over what is left of both sequences (``blob``).

        The blob reads and writes flat sequences only; with an S/G sequence it sees none.
        """
        rng = self.ctx.rng
        seq_in, seq_out = self.seq_in, self.seq_out
        window = None
        if seq_in.flat_address is not None and seq_out.flat_address is not None:
            window = SequenceWindow(
                self.bus, seq_in.flat_address, seq_in.remaining,
                seq_out.flat_address, seq_out.remaining,
            )  # fmt: skip
        draw = (lambda n: rng.generate(n, 0)) if rng.is_instantiated(0) else None
        result = run_blob(c.words[0], window, rng.keys, self.keys[2], draw, index=c.index)
        if result:
            raise JobStop(result)
        if window is not None:
            seq_in.pos = seq_in.total
            seq_out.pos = min(seq_out.total, seq_out.pos + window.written)

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
        aai = f["aai"] & ~E.AAI_DK  # the key register holds raw key bytes: DK changes nothing
        try:
            self.c1 = AesUnit(
                aai,
                f["encrypt"],
                self.keys[1],
                self.contexts[1],
                icv_check=f["icv"],
                state=f["state"],
            )
        except ChaError as err:
            raise JobStop(err.status(c.index)) from None
        self.c1_mode = "AES"
        waiting, self.waiting = self.waiting, []
        for early, data in waiting:
            self._class1(early, data)

    def _rng_op(self, c: Command) -> None:
        f = c.fields
        self.used("RNG")
        # Instantiate, generate (with prediction resistance), reseed, uninstantiate, secure
        # keys: rng.Rng4.operation has the rules and the status words.
        result = self.ctx.rng.operation(f["aai"], f["state"], f["pr"], index=c.index)
        if result:
            raise JobStop(result)
        self.c1_mode, self.rng_handle = "RNG", f["aai"] & RNG_AAI_SH
