"""The CHAs one job streams data through: class-1 AES (block modes, GCM, CCM), class-2 MD hashing.

Each unit takes data in the pieces the descriptor's FIFO LOADs deliver, returns output as soon as
the mode can produce it, keeps its context register current (CBC/CFB/OFB IV at offset 0, CTR
counter at offset 16, GCM tag at offset 0, the digest or running hash state at class-2 offset 0)
and raises ``ChaError`` with a CCB CHA id and error id for what the hardware would refuse.

CCM follows NXP's one-shot CCM descriptors (MCUXpresso fsl_caam.c templateAesCcm; OP-TEE
caam_ae_ccm.c): software LOADs B0 to context offset 0 and CTR0 to offset 16, FIFO LOADs the AAD
with its 2-byte length encoding in front, then the message; afterwards context offset 0 holds the
CBC-MAC T and offset 32 the encrypted tag T ^ E(CTR0) (encrypt) or E(CTR0) (decrypt, where OP-TEE
XORs the two itself). An ICV FIFO LOAD may follow the message's LAST1 (NXP's template does so).
Inferred, not documented: the AAD and message are each zero-padded to a block for the MAC, as
SP 800-38C formats them.

GCM in several jobs (states INIT, UPDATE, FINALIZE) runs on ``gcm.RunningGcm``, whose running
MAC, counter, J0 and lengths the class-1 context carries between jobs (layout in ``gcm``);
INITFINAL runs on OpenSSL. UPDATE and FINALIZE resume from the context as it stands when the
first data (or LAST1) arrives, so a LOAD before or after the OPERATION both work.

Model limits: GCM IVs of 8 to 128 bytes (what `cryptography` takes; others: AES DATASIZ), ICVs of
4 to 16 bytes; an IV FIFO LOAD in the other AES modes fills the context where the mode keeps its
IV; the MDHA takes a raw HMAC key (no split keys); its INIT, UPDATE and FINALIZE states keep a
running state in the class-2 context (``MdUnit``, layout in ``mdha``).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from cryptography.exceptions import AlreadyUpdated
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes

from cryptoffload.caam import status
from cryptoffload.caam.model.gcm import GcmStateError, RunningGcm
from cryptoffload.caam.model.mdha import ALGORITHMS, RunningHash
from cryptoffload.modes import CFB, OFB

__all__ = [
    "AAI_CBC",
    "AAI_CCM",
    "AAI_CFB",
    "AAI_CTR",
    "AAI_ECB",
    "AAI_GCM",
    "AAI_HASH",
    "AAI_HMAC",
    "AAI_OFB",
    "AesUnit",
    "ChaError",
    "MdUnit",
]

# AAI values (the 9-bit field of the OPERATION word, bits 12:4).
AAI_CTR = 0x00
AAI_CBC = 0x10
AAI_ECB = 0x20
AAI_CFB = 0x30
AAI_OFB = 0x40
AAI_CCM = 0x80
AAI_GCM = 0x90
AAI_HASH = 0x00
AAI_HMAC = 0x01

STATE_UPDATE = 0
STATE_INIT = 1
STATE_FINALIZE = 2
STATE_INITFINAL = 3

BLOCK = 16
CTR_OFFSET = 16
_GCM_IV_RANGE = (8, 128)  # what `cryptography`'s GCM accepts
_ICV_RANGE = (4, 16)


class ChaError(Exception):
    """A CHA refused the job: ``cha`` and ``error`` are the CCB status fields."""

    def __init__(self, cha: int, error: int, what: str) -> None:
        super().__init__(what)
        self.cha = cha
        self.error = error

    def status(self, index: int) -> int:
        """The CCB status word for the command at ``index``."""
        return status.ccb(self.cha, self.error, index)


def _aes_error(error: int, what: str) -> ChaError:
    return ChaError(status.CHA_AES, error, what)


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=False))


class AesUnit:
    """The class-1 AESA running one mode; ``context`` is the DECO's class-1 context register."""

    def __init__(
        self,
        aai: int,
        encrypt: bool,
        key: bytes,
        context: bytearray,
        *,
        icv_check: bool = False,
        state: int = STATE_INITFINAL,
    ) -> None:
        if aai not in (AAI_CTR, AAI_CBC, AAI_ECB, AAI_CFB, AAI_OFB, AAI_CCM, AAI_GCM):
            raise _aes_error(status.ERR_MODE, f"AES mode AAI 0x{aai:x} is not modelled")
        if len(key) not in (16, 24, 32):
            raise _aes_error(status.ERR_KEYSIZ, f"AES key of {len(key)} bytes")
        self.aai = aai
        self.encrypt = encrypt
        self.icv_check = icv_check and not encrypt
        self._key = bytes(key)
        self._ctx = context
        self._pending = b""  # message bytes short of a block, waiting for more or for LAST1
        self._iv = b""
        self._icv = b""
        self._gcm: CipherContext | None = None  # produces the output
        self._tagger: CipherContext | None = None  # decrypt: re-encrypts to compute the tag
        self._mac_input = bytearray()  # CCM: B0 || padded AAD || padded plaintext, for the MAC
        self._ccm: CipherContext | None = None  # CCM: the counter-mode part
        self._tag = b""  # CCM: the encrypted tag once the stream has ended
        self.state = state
        #: GCM in several jobs: the running state (made when the first data arrives).
        self._running: RunningGcm | None = None
        self.done = False

    def __repr__(self) -> str:
        return f"<AesUnit aai=0x{self.aai:02x} {'enc' if self.encrypt else 'dec'}>"

    # ------------------------------------------------------------------ block modes

    def _cipher(self, mode: modes.Mode) -> CipherContext:
        cipher = Cipher(algorithms.AES(self._key), mode)
        return cipher.encryptor() if self.encrypt else cipher.decryptor()

    def _blocks(self, data: bytes) -> bytes:
        """Run whole blocks through the mode, updating the context register."""
        if not data:
            return b""
        ctx = self._ctx
        if self.aai == AAI_ECB:
            return self._cipher(modes.ECB()).update(data)
        if self.aai == AAI_CTR:
            counter = bytes(ctx[CTR_OFFSET : CTR_OFFSET + BLOCK])
            out = Cipher(algorithms.AES(self._key), modes.CTR(counter)).encryptor().update(data)
            value = int.from_bytes(counter, "big") + -(-len(data) // BLOCK)
            ctx[CTR_OFFSET : CTR_OFFSET + BLOCK] = (value % (1 << 128)).to_bytes(BLOCK, "big")
            return out
        iv = bytes(ctx[0:BLOCK])
        if self.aai == AAI_CBC:
            out = self._cipher(modes.CBC(iv)).update(data)
            ctx[0:BLOCK] = (out if self.encrypt else data)[-BLOCK:]
        elif self.aai == AAI_CFB:
            out = self._cipher(CFB(iv)).update(data)
            ctx[0:BLOCK] = (out if self.encrypt else data)[-BLOCK:]
        else:  # OFB: the next IV is the last keystream block
            out = Cipher(algorithms.AES(self._key), OFB(iv)).encryptor().update(data)
            ctx[0:BLOCK] = _xor(out[-BLOCK:], data[-BLOCK:])
        return out

    def _message(self, data: bytes) -> bytes:
        data = self._pending + data
        cut = len(data) - len(data) % BLOCK
        self._pending = data[cut:]
        return self._blocks(data[:cut])

    def _tail(self) -> bytes:
        tail, self._pending = self._pending, b""
        if not tail:
            return b""
        if self.aai in (AAI_CBC, AAI_ECB):
            raise _aes_error(status.ERR_DATASIZ, f"{len(tail)} bytes left over a whole block")
        # CTR, CFB, OFB: the last partial block uses the first bytes of one keystream block.
        return self._blocks(tail.ljust(BLOCK, b"\0"))[: len(tail)]

    # ------------------------------------------------------------------ GCM

    def _gcm_start(self) -> None:
        if self._gcm is not None:
            return
        low, high = _GCM_IV_RANGE
        if not low <= len(self._iv) <= high:
            raise _aes_error(status.ERR_DATASIZ, f"GCM IV of {len(self._iv)} bytes")
        cipher = Cipher(algorithms.AES(self._key), modes.GCM(self._iv))
        if self.encrypt:
            self._gcm = cipher.encryptor()
        else:
            self._gcm = cipher.decryptor()
            self._tagger = cipher.encryptor()

    def _multi_job(self) -> RunningGcm:
        """The running GCM of an INIT, UPDATE or FINALIZE job, started or resumed."""
        run = self._running
        if run is None:
            run = self._running = RunningGcm(self._key, self.encrypt)
            if self.state == STATE_INIT:
                low, high = _GCM_IV_RANGE
                if not low <= len(self._iv) <= high:
                    raise _aes_error(status.ERR_DATASIZ, f"GCM IV of {len(self._iv)} bytes")
                run.start(self._iv)
            else:
                run.resume(bytes(self._ctx[0:64]))
        return run

    def _gcm_step(self, kind: str, data: bytes) -> bytes:
        """One FIFO LOAD of a multi-job GCM."""
        if kind == "iv":
            if self.state != STATE_INIT or self._running is not None:
                raise _aes_error(status.ERR_SEQUENCE, "GCM IV outside an INIT job's start")
            self._iv += data
            return b""
        if kind == "icv":
            self._icv += data
            return b""
        run = self._multi_job()
        try:
            if kind == "aad":
                run.aad(data)
                return b""
            return run.message(data)
        except GcmStateError as err:
            raise _aes_error(err.error, str(err)) from None

    def _gcm_step_finish(self) -> None:
        run = self._multi_job()
        if self.state != STATE_FINALIZE:
            self._ctx[0:64] = run.end_piece()
            return
        self._ctx[0:BLOCK] = run.tag()
        self._check_gcm_icv(bytes(self._ctx[0:BLOCK]))

    def _check_gcm_icv(self, tag: bytes) -> None:
        if self.icv_check:
            low, high = _ICV_RANGE
            if not low <= len(self._icv) <= high:
                raise _aes_error(status.ERR_DATASIZ, f"GCM ICV of {len(self._icv)} bytes")
            if not hmac.compare_digest(tag[: len(self._icv)], self._icv):
                raise _aes_error(status.ERR_ICVCHK, "GCM tag mismatch")

    def _gcm_feed(self, kind: str, data: bytes) -> bytes:
        if self.state != STATE_INITFINAL:
            return self._gcm_step(kind, data)
        if kind == "iv":
            if self._gcm is not None:
                raise _aes_error(status.ERR_SEQUENCE, "GCM IV after AAD or message")
            self._iv += data
            return b""
        if kind == "icv":
            self._icv += data
            return b""
        self._gcm_start()
        assert self._gcm is not None
        try:
            if kind == "aad":
                self._gcm.authenticate_additional_data(data)
                if self._tagger is not None:
                    self._tagger.authenticate_additional_data(data)
                return b""
            out = self._gcm.update(data)
        except AlreadyUpdated as exc:
            raise _aes_error(status.ERR_SEQUENCE, "GCM AAD after message data") from exc
        if self._tagger is not None:
            self._tagger.update(out)  # re-encrypting the plaintext gives back the ciphertext
        return out

    def _gcm_finish(self) -> None:
        if self.state != STATE_INITFINAL:
            self._gcm_step_finish()
            return
        self._gcm_start()
        tagger = self._tagger if self._tagger is not None else self._gcm
        assert tagger is not None
        tagger.finalize()
        tag = tagger.tag  # type: ignore[attr-defined]
        self._ctx[0:BLOCK] = tag
        self._check_gcm_icv(tag)

    # ------------------------------------------------------------------ CCM

    def _ccm_feed(self, kind: str, data: bytes) -> bytes:
        if kind == "icv":
            self._icv += data
            if self.done:  # the ICV after the message's LAST1, as NXP's descriptors load it
                self._ccm_check()
            return b""
        if kind == "aad":
            if self._ccm is not None:
                raise _aes_error(status.ERR_SEQUENCE, "CCM AAD after message data")
            if not self._mac_input:
                self._mac_input += self._ctx[0:BLOCK]  # B0
            self._mac_input += data
            return b""
        if kind != "msg":
            raise _aes_error(status.ERR_SEQUENCE, f"{kind.upper()} data in AES CCM")
        self._ccm_start()
        assert self._ccm is not None
        out = self._ccm.update(data)
        self._mac_input += out if not self.encrypt else data
        return out

    def _ccm_start(self) -> None:
        if self._ccm is not None:
            return
        if not self._mac_input:
            self._mac_input += self._ctx[0:BLOCK]
        self._mac_input += bytes(-len(self._mac_input) % BLOCK)  # the AAD's zero padding
        ctr1 = (int.from_bytes(self._ctx[CTR_OFFSET : CTR_OFFSET + BLOCK], "big") + 1) % (1 << 128)
        mode = modes.CTR(ctr1.to_bytes(BLOCK, "big"))
        self._ccm = Cipher(algorithms.AES(self._key), mode).encryptor()

    def _ccm_finish(self) -> None:
        self._ccm_start()
        mac_input = bytes(self._mac_input) + bytes(-len(self._mac_input) % BLOCK)
        mac = Cipher(algorithms.AES(self._key), modes.CBC(bytes(BLOCK))).encryptor()
        t = mac.update(mac_input)[-BLOCK:]
        ctr0 = bytes(self._ctx[CTR_OFFSET : CTR_OFFSET + BLOCK])
        s0 = Cipher(algorithms.AES(self._key), modes.ECB()).encryptor().update(ctr0)
        self._tag = _xor(t, s0)
        self._ctx[0:BLOCK] = t
        self._ctx[2 * BLOCK : 3 * BLOCK] = self._tag if self.encrypt else s0
        if self._icv:
            self._ccm_check()

    def _ccm_check(self) -> None:
        if not self.icv_check:
            return
        low, high = _ICV_RANGE
        if not low <= len(self._icv) <= high:
            raise _aes_error(status.ERR_DATASIZ, f"CCM ICV of {len(self._icv)} bytes")
        if not hmac.compare_digest(self._tag[: len(self._icv)], self._icv):
            raise _aes_error(status.ERR_ICVCHK, "CCM tag mismatch")

    # ------------------------------------------------------------------ FIFO interface

    def feed(self, kind: str, data: bytes) -> bytes:
        """Take one FIFO LOAD's data of ``kind`` ("msg", "iv", "aad", "icv"); return output."""
        if self.aai == AAI_CCM and (kind == "icv" or not self.done):
            return self._ccm_feed(kind, data)
        if self.done:
            raise _aes_error(status.ERR_SEQUENCE, "data after LAST1")
        if self.aai == AAI_GCM:
            return self._gcm_feed(kind, data)
        if kind == "msg":
            return self._message(data)
        if kind == "iv":  # an IV FIFO LOAD fills the context where the mode keeps its IV
            offset = CTR_OFFSET if self.aai == AAI_CTR else 0
            self._ctx[offset : offset + len(data)] = data
            return b""
        raise _aes_error(status.ERR_SEQUENCE, f"{kind.upper()} data in AES AAI 0x{self.aai:x}")

    def finish(self) -> bytes:
        """LAST1: process what is left, finish the tag (GCM); return the last output."""
        if self.done:
            return b""
        self.done = True
        if self.aai == AAI_GCM:
            self._gcm_finish()
            return b""
        if self.aai == AAI_CCM:
            self._ccm_finish()
            return b""
        return self._tail()


_HASHES = {
    0x40: ("md5", 16),
    0x41: ("sha1", 20),
    0x42: ("sha224", 28),
    0x43: ("sha256", 32),
    0x44: ("sha384", 48),
    0x45: ("sha512", 64),
}


def _md_error(error: int, what: str) -> ChaError:
    return ChaError(status.CHA_MD, error, what)


class MdUnit:
    """The class-2 MDHA hashing (or HMAC-ing with a raw key) in one of the four states.

    INITFINAL hashes one whole message with ``hashlib`` / ``hmac``. INIT, UPDATE and FINALIZE
    run on ``mdha.RunningHash`` so that the running state can leave through the class-2 context
    (layout in ``mdha``): INIT starts from the initial values, UPDATE and FINALIZE resume from
    the context register as it stands when the first data (or LAST2) arrives, so a LOAD of the
    context before or after the OPERATION both work. After each FIFO LOAD of an INIT or UPDATE
    the context holds the state of the whole blocks taken so far; at LAST2 a piece that is not a
    whole number of blocks is CCB MD DATASIZ (the MDHA takes block multiples except on the last
    piece). FINALIZE and INITFINAL put the digest at offset 0 and check an ICV; INIT and UPDATE
    take ICV data but never check it.

    HMAC the natural way (multi-job HMAC on hardware is not confirmed): INIT hashes the key
    block K ^ ipad first (so the saved count includes that block), UPDATE needs no key, and
    FINALIZE takes the key again for the outer hash, as Linux caamhash loads it for every state
    but UPDATE. A key longer than a block is hashed first, as HMAC does.
    """

    def __init__(
        self,
        alg: int,
        aai: int,
        state: int,
        key: bytes,
        context: bytearray,
        *,
        icv_check: bool = False,
    ) -> None:
        if alg not in _HASHES:
            raise ChaError(0, status.ERR_INVCHA, f"class-2 algorithm 0x{alg:x}")
        if aai not in (AAI_HASH, AAI_HMAC):
            raise _md_error(status.ERR_MODE, f"MD AAI 0x{aai:x} is not modelled")
        self.name, self.digest_size = _HASHES[alg]
        self.state = state
        self.final = state in (STATE_FINALIZE, STATE_INITFINAL)
        self._ctx = context
        self._icv_check = icv_check
        self._icv = b""
        self._hmac_key = bytes(key) if aai == AAI_HMAC and state != STATE_UPDATE else None
        self._h: Any = None  # INITFINAL: hashlib or hmac
        self._run: RunningHash | None = None  # the other states
        if state == STATE_INITFINAL:
            if self._hmac_key is not None:
                self._h = hmac.new(self._hmac_key, digestmod=self.name)
            else:
                self._h = hashlib.new(self.name)
        elif state == STATE_INIT:
            self._run = RunningHash(self.name)
            if self._hmac_key is not None:
                self._run.update(self._key_block(0x36))
        self.done = False

    def __repr__(self) -> str:
        return f"<MdUnit {self.name} state={self.state}>"

    def _key_block(self, pad: int) -> bytes:
        """The HMAC key, hashed if over a block, zero-padded to a block and XORed with ``pad``."""
        assert self._hmac_key is not None
        size = ALGORITHMS[self.name].block_size
        key = self._hmac_key
        if len(key) > size:
            key = hashlib.new(self.name, key).digest()
        return bytes(b ^ pad for b in key.ljust(size, b"\0"))

    def _running(self) -> RunningHash:
        if self._run is None:
            self._run = RunningHash.load(self.name, bytes(self._ctx))
        return self._run

    def _save(self) -> None:
        saved = self._running().export()
        self._ctx[0 : len(saved)] = saved

    def feed(self, kind: str, data: bytes) -> None:
        """Take message (or AAD, hashed alike) or ICV bytes."""
        if self.done:
            raise _md_error(status.ERR_SEQUENCE, "data after LAST2")
        if kind == "icv":
            self._icv += data
        elif kind not in ("msg", "aad"):
            raise _md_error(status.ERR_SEQUENCE, f"{kind.upper()} data for the MDHA")
        elif self._h is not None:
            self._h.update(data)
        else:
            self._running().update(data)
            if not self.final:
                self._save()

    def finish(self) -> None:
        """LAST2: save the running state (INIT, UPDATE) or put the digest at offset 0."""
        if self.done:
            return
        self.done = True
        if not self.final:
            run = self._running()
            if run.pending:
                raise _md_error(status.ERR_DATASIZ, f"{run.pending} bytes over a whole block")
            self._save()
            return
        if self._h is not None:
            digest = self._h.digest()
        else:
            digest = self._running().digest()
            if self._hmac_key is not None:
                digest = hashlib.new(self.name, self._key_block(0x5C) + digest).digest()
        self._ctx[0 : len(digest)] = digest
        if self._icv_check and not hmac.compare_digest(digest[: len(self._icv)], self._icv):
            raise _md_error(status.ERR_ICVCHK, "MAC mismatch")
