"""The BLOB protocol of the CAAM model (PROTID 0x0D): data or a black key sealed for one device.

As Linux drives it (blob_gen.c, trusted_caam.c; the posted "protected key" series for black
keys): the key modifier (at most 16 bytes; the kernel uses "SECURE_KEY" or 16 bytes) is in the
class-2 key register (KEY or LOAD class 2), the input is the SEQ IN sequence and the output the
SEQ OUT sequence, there is no PDB. OPERATION 0x870D0000 encapsulates n bytes into n + 48
(CAAM_BLOB_OVERHEAD = 32 + 16), 0x860D0000 decapsulates n + 48 bytes back into n.

PROTINFO: bits 1:0 the format (0 normal; 2 master-key verification and 3 test are not modelled),
BLACK 0x4 (the payload is a black key), PTXT_SECMEM 0x8 (plaintext in secure memory, which the
model has not), EKT 0x100 (the black key is CCM-covered, else ECB), TK 0x200 (covered by the TDKEK,
which needs a trusted descriptor). With BLACK, encapsulation reads the black form of an n-byte key
(n = the input sequence's length; ``keys.black_size`` bytes) and seals the key itself, and
decapsulation writes the key's black form (longer than the output sequence's length n, as the
hardware does). Keys cross the blob only inside the model.

The blob (the hardware's layout from the kernel's comment, the cryptography the model's choice):
  blob = AES-256-ECB(BKEK, BK) || AES-256-CCM(BK, nonce 0^7, payload, AAD = first 32 bytes)
with BK a fresh random 32-byte blob key from RNG4 state handle 0 and the BKEK derived from the
device's master key, the key modifier and the blob's kind (red or black, ``keys``): 32 + n + 16
bytes. The key is fresh for every blob, so the constant nonce never repeats under one key.

Status words (the model's choices where the manuals are not public; * are inferred):
- DECO 0x24 (JDKEK, TDKEK or TDSK not loaded) before RNG4's secure-key generation (SK);
- CCB RNG 0x54 when state handle 0 is not instantiated (encapsulation draws BK, a CCM black key
  its nonce);
- decapsulation with another key modifier, on another device, of a changed blob, or of a blob of
  the other kind (red/black): CCB AES ICV (0x1A), the status the kernel maps to -EBADMSG; nothing
  is written;
- DECO 0xC1 (undefined mode*): a format other than 0, unknown PROTINFO bits, EKT without BLACK,
  a key modifier over 16 bytes; DECO 0xC2* PTXT_SECMEM; DECO 0xC8* TK;
- DECO 0xC4 (black blob key or input size): a black key of 0 or more than 64 bytes*;
- DECO 0x89* (protocol size): a decapsulation input shorter than the 48-byte overhead;
- DECO 0x10 (invalid sequence): no SEQ IN/OUT PTR, an S/G sequence (blobs take flat buffers
  only in the model, as blob_gen.c gives them), or an output sequence shorter than the output;
  DECO 0x16 (DMA) for unreachable buffers; CCB AES ICV for a CCM black key whose ICV
  does not check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM

from cryptoffload.caam import status
from cryptoffload.caam.model.keys import (
    CCM_NONCE_BYTES,
    CoverError,
    DeviceKeys,
    KeysNotLoaded,
    black_size,
)
from cryptoffload.caam.model.memory import DmaError

__all__ = ["OVERHEAD", "PROTID_BLOB", "BlobIo", "SequenceWindow", "run_blob", "seal", "unseal"]

PROTID_BLOB = 0x0D
BLOB_KEY_BYTES = 32
MAC_BYTES = 16
#: What a blob adds to its payload: the covered blob key and the MAC (Linux CAAM_BLOB_OVERHEAD).
OVERHEAD = BLOB_KEY_BYTES + MAC_BYTES
MAX_KEY_MODIFIER = 16
#: The largest black key the model seals (a choice: the largest key register is 64 bytes).
MAX_BLACK_KEY = 64

# PROTINFO bits.
FORMAT_MASK = 0x3
FORMAT_NORMAL = 0
BLACK = 0x4
PTXT_SECMEM = 0x8
EKT = 0x100
TK = 0x200
_KNOWN = FORMAT_MASK | BLACK | PTXT_SECMEM | EKT | TK
_CCM_NONCE = bytes(7)
_OP_ENCAP = 0x87
_OP_DECAP = 0x86
_DECO_INVALID_SEQUENCE = 0x10


class _Fail(Exception):
    def __init__(self, word: int) -> None:
        super().__init__(f"status 0x{word:08x}")
        self.word = word


class BlobIo(Protocol):
    """The sequences a blob OPERATION reads and writes, from where they stand."""

    input_length: int
    output_length: int

    def read(self, n: int) -> bytes:
        """``n`` bytes from the start of the input (may run past its length: black keys)."""
        ...

    def write(self, data: bytes) -> None:
        """``data`` at the start of the output (may run past its length: black keys)."""
        ...


class _Memory(Protocol):
    def read(self, addr: int, n: int) -> bytes: ...

    def write(self, addr: int, data: bytes) -> None: ...


@dataclass
class SequenceWindow:
    """BlobIo over contiguous memory: the unread input and the unwritten output of a job."""

    memory: _Memory  # a DmaMemory, or the job's bus (which records the writes)
    input_address: int
    input_length: int
    output_address: int
    output_length: int
    written: int = 0

    def read(self, n: int) -> bytes:
        return self.memory.read(self.input_address, n) if n else b""

    def write(self, data: bytes) -> None:
        self.memory.write(self.output_address, data)
        self.written = len(data)


def _ecb(key: bytes, data: bytes, *, encrypt: bool) -> bytes:
    cipher = Cipher(algorithms.AES(key), modes.ECB())
    ctx = cipher.encryptor() if encrypt else cipher.decryptor()
    return ctx.update(data) + ctx.finalize()


def seal(keys: DeviceKeys, modifier: bytes, payload: bytes, kind: str, blob_key: bytes) -> bytes:
    """The blob of ``payload`` under ``blob_key`` (32 random bytes), for this device."""
    bkek = keys.blob_key_encryption_key(modifier, kind)
    covered = _ecb(bkek, blob_key, encrypt=True)
    return covered + AESCCM(blob_key, tag_length=MAC_BYTES).encrypt(_CCM_NONCE, payload, covered)


def unseal(keys: DeviceKeys, modifier: bytes, blob: bytes, kind: str) -> bytes | None:
    """The payload of ``blob``, or None when its MAC does not check on this device."""
    if len(blob) < OVERHEAD:
        return None
    covered, sealed = blob[:BLOB_KEY_BYTES], blob[BLOB_KEY_BYTES:]
    blob_key = _ecb(keys.blob_key_encryption_key(modifier, kind), covered, encrypt=False)
    try:
        return AESCCM(blob_key, tag_length=MAC_BYTES).decrypt(_CCM_NONCE, sealed, covered)
    except InvalidTag:
        return None


def _mode(op_word: int, modifier: bytes, index: int) -> tuple[bool, bool, bool]:
    """(encapsulate, black, ccm) from the OPERATION word, or _Fail for what is not modelled."""
    info = op_word & 0xFFFF
    kind = op_word >> 24
    if kind not in (_OP_ENCAP, _OP_DECAP) or (op_word >> 16) & 0xFF != PROTID_BLOB:
        raise _Fail(status.deco(status.DECO_UNDEFPCL, index))
    if info & PTXT_SECMEM:
        raise _Fail(status.deco(status.DECO_BLOB_SECMEM, index))
    if info & TK:
        raise _Fail(status.deco(status.DECO_BLOB_TRUSTED, index))
    black, ccm = bool(info & BLACK), bool(info & EKT)
    if (
        info & ~_KNOWN
        or info & FORMAT_MASK != FORMAT_NORMAL
        or (ccm and not black)
        or len(modifier) > MAX_KEY_MODIFIER
    ):
        raise _Fail(status.deco(status.DECO_BLOB_UNDEFINED_MODE, index))
    return kind == _OP_ENCAP, black, ccm


def _random(rng: Callable[[int], bytes] | None, n: int, index: int) -> bytes:
    if rng is None:
        raise _Fail(status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, index))
    return rng(n)


def _check_black_length(n: int, index: int) -> None:
    if not 0 < n <= MAX_BLACK_KEY:
        raise _Fail(status.deco(status.DECO_BLOB_BLACK_SIZE, index))


def _encapsulate(
    io: BlobIo,
    keys: DeviceKeys,
    modifier: bytes,
    black: bool,
    ccm: bool,
    rng: Callable[[int], bytes] | None,
    index: int,
) -> None:
    n = io.input_length
    if n + OVERHEAD > io.output_length:
        raise _Fail(status.deco(_DECO_INVALID_SEQUENCE, index))
    if black:
        _check_black_length(n, index)
        try:
            payload = keys.uncover(io.read(black_size(n, ccm=ccm)), n, ccm=ccm)
        except CoverError:
            raise _Fail(status.ccb(status.CHA_AES, status.ERR_ICVCHK, index)) from None
    else:
        payload = io.read(n)
    blob_key = _random(rng, BLOB_KEY_BYTES, index)
    io.write(seal(keys, modifier, payload, "black" if black else "red", blob_key))


def _decapsulate(
    io: BlobIo,
    keys: DeviceKeys,
    modifier: bytes,
    black: bool,
    ccm: bool,
    rng: Callable[[int], bytes] | None,
    index: int,
) -> None:
    n = io.input_length - OVERHEAD
    if n < 0:
        raise _Fail(status.deco(status.DECO_PROTOCOL_SIZE, index))
    if n > io.output_length:
        raise _Fail(status.deco(_DECO_INVALID_SEQUENCE, index))
    if black:
        _check_black_length(n, index)
    nonce = _random(rng, CCM_NONCE_BYTES, index) if black and ccm else b""
    payload = unseal(keys, modifier, io.read(io.input_length), "black" if black else "red")
    if payload is None:
        raise _Fail(status.ccb(status.CHA_AES, status.ERR_ICVCHK, index))
    io.write(keys.cover(payload, ccm=ccm, nonce=nonce) if black else payload)


def run_blob(
    op_word: int,
    io: BlobIo | None,
    keys: DeviceKeys,
    modifier: bytes,
    rng: Callable[[int], bytes] | None,
    *,
    index: int,
) -> int:
    """Run the blob OPERATION ``op_word`` at descriptor word ``index``; returns the status.

    ``io`` is None when the job set no input or output sequence; ``modifier`` is the class-2 key
    register; ``rng`` draws from RNG4 state handle 0 (None when it is not instantiated).
    """
    try:
        encap, black, ccm = _mode(op_word, modifier, index)
        if not keys.secure_keys_valid:
            raise _Fail(status.deco(status.DECO_KEYS_NOT_LOADED, index))
        if io is None:
            raise _Fail(status.deco(_DECO_INVALID_SEQUENCE, index))
        run = _encapsulate if encap else _decapsulate
        run(io, keys, bytes(modifier), black, ccm, rng, index)
    except _Fail as fail:
        return fail.word
    except KeysNotLoaded:
        return status.deco(status.DECO_KEYS_NOT_LOADED, index)
    except DmaError:
        return status.deco(status.DECO_DMA, index)
    return status.OK
