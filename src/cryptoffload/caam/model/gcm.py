"""GCM whose running state leaves through the class-1 context, for multi-job (INIT/UPDATE/FINALIZE).

OpenSSL cannot export a GCM state, so the AESA's multi-job GCM runs on the model's own GHASH
(GF(2^128) with 8-bit tables per hash key) and counter; AES itself is `cryptography`'s ECB.

The saved class-1 context (64 bytes, the model's layout; the sources give only "GCM tag at
offset 0" and that the context holds the running MAC, the counter and the lengths):

====== ======================================================================
0..15  MAC: the running GHASH value Y_i (after FINALIZE: the tag)
16..31 the counter block last used (J0 before any message block)
32..47 J0, the pre-counter block (its encryption masks the tag)
48..63 len(A) and len(C) in bits, 64-bit big-endian each: GHASH's length block
====== ======================================================================

A job that is not the last must end on whole blocks of message: the model carries no partial
block across jobs. Within a job the pieces may be of any size. A partial last piece of AAD
closes the AAD (it is zero-padded into GHASH); a partial last piece of message closes the
message. Data after either, in a later job, is a CCB AES SEQUENCE error (hardware's behaviour
there is not documented; a wrong tag is the likely result, which the model does not imitate).
"""

from __future__ import annotations

import functools

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["CONTEXT_BYTES", "GcmStateError", "RunningGcm"]

BLOCK = 16
CONTEXT_BYTES = 64
_R = 0xE1 << 120
_M32 = 0xFFFF_FFFF
#: Status error ids (status.ERR_SEQUENCE, ERR_DATASIZ), repeated here to keep this unit free
#: of the CHA module that wraps it.
SEQUENCE = 0x6
DATASIZ = 0x2


class GcmStateError(Exception):
    """Data the running GCM cannot take: ``error`` is the CCB error id."""

    def __init__(self, error: int, what: str) -> None:
        super().__init__(what)
        self.error = error


@functools.lru_cache(maxsize=32)
def _tables(h: int) -> tuple[tuple[int, ...], ...]:
    """For each of the 16 byte positions, the products of H with the 256 byte values."""
    powers = []  # H * x^k, k = 0..127
    v = h
    for _ in range(128):
        powers.append(v)
        v = (v >> 1) ^ _R if v & 1 else v >> 1
    tables = []
    for j in range(16):
        t = [0] * 256
        for m in range(7, -1, -1):  # bit 0x80 >> m of the byte is coefficient x^(8j + m)
            bit, p = 0x80 >> m, powers[8 * j + m]
            for b in range(bit):
                t[bit | b] = t[b] ^ p
        tables.append(tuple(t))
    return tuple(tables)


class RunningGcm:
    """One job's GCM: started from an IV (INIT) or resumed from a saved context."""

    def __init__(self, key: bytes, encrypt: bool) -> None:
        self._ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        self._tables = _tables(int.from_bytes(self._ecb.update(bytes(BLOCK)), "big"))
        self.encrypt = encrypt
        self.mac = 0
        self.counter = b""
        self.j0 = b""
        self.aad_bits = 0
        self.msg_bits = 0
        self._aad_pending = b""  # AAD short of a block, this job
        self._hash_pending = b""  # ciphertext short of a block, this job
        self._stream = b""  # keystream left over from the last partial block, this job

    # ------------------------------------------------------------------ GHASH

    def _mul(self, x: int) -> int:
        z = 0
        for t, b in zip(self._tables, x.to_bytes(BLOCK, "big"), strict=True):
            z ^= t[b]
        return z

    def _ghash(self, data: bytes) -> None:
        """Fold whole blocks of ``data`` into the MAC."""
        y = self.mac
        for at in range(0, len(data), BLOCK):
            y = self._mul(y ^ int.from_bytes(data[at : at + BLOCK], "big"))
        self.mac = y

    # ------------------------------------------------------------------ start and resume

    def start(self, iv: bytes) -> None:
        """INIT: J0 from the IV (12 bytes: IV ‖ 1; else GHASH of the padded IV and its length)."""
        if len(iv) == 12:
            j0 = iv + b"\0\0\0\1"
        else:
            pad = bytes(-len(iv) % BLOCK)
            self._ghash(iv + pad + bytes(8) + (8 * len(iv)).to_bytes(8, "big"))
            j0, self.mac = self.mac.to_bytes(BLOCK, "big"), 0
        self.counter = self.j0 = j0

    def resume(self, context: bytes) -> None:
        """UPDATE / FINALIZE: the state a previous job saved (the layout above)."""
        self.mac = int.from_bytes(context[0:16], "big")
        self.counter = bytes(context[16:32])
        self.j0 = bytes(context[32:48])
        self.aad_bits = int.from_bytes(context[48:56], "big")
        self.msg_bits = int.from_bytes(context[56:64], "big")

    def export(self) -> bytes:
        """The context a later job resumes from."""
        return (
            self.mac.to_bytes(BLOCK, "big") + self.counter + self.j0
            + self.aad_bits.to_bytes(8, "big") + self.msg_bits.to_bytes(8, "big")
        )  # fmt: skip

    # ------------------------------------------------------------------ data

    def aad(self, data: bytes) -> None:
        if self.msg_bits or self._hash_pending or self._stream:
            raise GcmStateError(SEQUENCE, "GCM AAD after message data")
        if self.aad_bits % 128 and not self._aad_pending:
            raise GcmStateError(SEQUENCE, "GCM AAD after a closed (partial) AAD block")
        self.aad_bits += 8 * len(data)
        data = self._aad_pending + data
        cut = len(data) - len(data) % BLOCK
        self._ghash(data[:cut])
        self._aad_pending = data[cut:]

    def _close_aad(self) -> None:
        if self._aad_pending:
            self._ghash(self._aad_pending.ljust(BLOCK, b"\0"))
            self._aad_pending = b""

    def message(self, data: bytes) -> bytes:
        """Encrypt or decrypt ``data``; the output."""
        if self.msg_bits % 128 and not self._stream and not self._hash_pending:
            raise GcmStateError(SEQUENCE, "GCM message after a closed (partial) block")
        self._close_aad()
        if not data:
            return b""
        stream = self._stream
        need = len(data) - len(stream)
        if need > 0:
            blocks = -(-need // BLOCK)
            stream += self._ecb.update(self._counters(blocks))
        self._stream = stream[len(data) :]
        n = len(data)
        out = (int.from_bytes(data, "big") ^ int.from_bytes(stream[:n], "big")).to_bytes(n, "big")
        self.msg_bits += 8 * n
        text = self._hash_pending + (out if self.encrypt else data)
        cut = len(text) - len(text) % BLOCK
        self._ghash(text[:cut])
        self._hash_pending = text[cut:]
        return out

    def _counters(self, blocks: int) -> bytes:
        """The next ``blocks`` counter blocks (inc32: the low 32 bits wrap)."""
        head, low = self.counter[:12], int.from_bytes(self.counter[12:], "big")
        out = [head + ((low + i) & _M32).to_bytes(4, "big") for i in range(1, blocks + 1)]
        self.counter = out[-1]
        return b"".join(out)

    def end_piece(self) -> bytes:
        """LAST1 of an INIT or UPDATE job: partial blocks padded in; the context to save."""
        self._close_aad()
        if self._hash_pending:
            self._ghash(self._hash_pending.ljust(BLOCK, b"\0"))
        self._hash_pending = self._stream = b""
        return self.export()

    def tag(self) -> bytes:
        """LAST1 of a FINALIZE job: the 16-byte tag (also left as the MAC)."""
        self.end_piece()
        self._ghash(self.aad_bits.to_bytes(8, "big") + self.msg_bits.to_bytes(8, "big"))
        mask = int.from_bytes(self._ecb.update(self.j0), "big")
        self.mac ^= mask
        return self.mac.to_bytes(BLOCK, "big")
