"""AES-GCM fed piece by piece: the class-1 context carries GHASH, counter and lengths between jobs.

The first job runs AS=INIT (with the IV), later ones AS=UPDATE with the saved context LOADed
back and STOREd again, the last AS=FINALIZE (AS=INITFINAL when nothing ran before it), which
stores the tag (encrypt) or checks it with ICV_ON (decrypt), as caamhash carries a hash's
class-2 context between jobs. Only whole blocks enter a saved context: message bytes short of
a block are answered at once by a job whose saved context is dropped ("peek"), and sent again
with what follows them; AAD short of a block waits for the message (or more AAD).

Sequences of one job: in = [context (64, UPDATE/FINALIZE)] ‖ AAD ‖ message ‖ [ICV];
out = message ‖ [context (64, INIT/UPDATE) or tag (16, encrypt FINALIZE/INITFINAL)].
"""

from __future__ import annotations

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import (
    AesKey,
    Buffers,
    Bytes,
    DriverLike,
    Prepared,
    append_key,
    check,
    execute,
    key_ident,
    key_shape,
)
from cryptoffload.caam.recipes.templates import JobTemplate, job_header, seq_flags, shared, template
from cryptoffload.errors import Unavailable

__all__ = ["CHUNK", "CONTEXT", "GcmStream", "open_stream"]

BLOCK = 16
TAG = 16
CONTEXT = 64  # the class-1 context a GCM job saves (layout: caam.model.gcm)
#: The most AAD or message one job takes; a longer update runs as several jobs.
CHUNK = 1 << 20
_RESUMES = frozenset({"update", "finalize"})
_FINAL = frozenset({"finalize", "initfinal"})


def _build(
    b: DescriptorBuilder, key: AesKey, state: str, encrypt: bool, aad: bool, msg: bool, tag: int
) -> None:
    """KEY; LOAD the context (resuming); OPERATION; AAD and message through VLF lengths (MATH3,
    MATH2 set by the job); the ICV (decrypt's last job); STORE the context or the tag."""
    final, check_icv = state in _FINAL, state in _FINAL and not encrypt
    b.header(kind="shared", share="serial")
    append_key(b, 1, key)
    if state in _RESUMES:
        b.load(1, "context", length=CONTEXT, seq=True)
    b.operation(1, "AES", aai="GCM", state=state, encrypt=encrypt, icv=check_icv)
    ends = not check_icv  # the last AAD or message load ends the stream (else the ICV does)
    if aad:
        b.math("ADD", "ZERO", "MATH3", "VARSEQINLEN")
        b.fifo_load(1, "AAD", seq=True, vlf=True, flush1=True, last1=ends and not msg)
    if msg:
        b.math("ADD", "ZERO", "MATH2", "VARSEQINLEN")
        b.math("ADD", "ZERO", "MATH2", "VARSEQOUTLEN")
        b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)
        b.fifo_load(1, "MSG", seq=True, vlf=True, flush1=not ends, last1=ends)
    if ends and not aad and not msg and state in _RESUMES:
        b.fifo_load(1, "MSG", data=b"", last1=True)  # nothing new: end the stream here
    if check_icv:
        b.fifo_load(1, "ICV", seq=True, length=tag, last1=True)
    elif final:
        b.store(1, "context", length=TAG, seq=True)
    else:
        b.store(1, "context", length=CONTEXT, seq=True)


def _job(driver: DriverLike, shlen: int, state: str, last_iv: bool) -> JobTemplate:
    """Sequences, MATH3 = AAD length, MATH2 = message length, the IV inline (INIT states)."""
    init = state not in _RESUMES
    fields = [("shared", "ptr"), ("in", "ptr"), ("in_len", "word"), ("out", "ptr"),
              ("out_len", "word"), ("aad", "word"), ("msg", "word")]  # fmt: skip
    if init:
        fields += [("iv0", "word"), ("iv1", "word"), ("iv2", "word")]

    def build(v: dict[str, int]) -> list[int]:
        b = job_header(driver.pointer_size, shlen, v["shared"])
        b.seq_in_ptr(pointer=v["in"], length=v["in_len"], flags=seq_flags(False))
        b.seq_out_ptr(pointer=v["out"], length=v["out_len"], flags=seq_flags(False))
        b.math("ADD", "ZERO", "IMM", "MATH3", imm=v["aad"])
        b.math("ADD", "ZERO", "IMM", "MATH2", imm=v["msg"])
        if init:
            iv = b"".join(v[f"iv{i}"].to_bytes(4, "big") for i in range(3))
            b.fifo_load(1, "IV", data=iv, flush1=True, last1=last_iv)
        return b.words()

    key = ("gcm-stream", driver.pointer_size, shlen, state, last_iv)
    return template(key, driver.pointer_size, fields, build)


def prepare_step(
    driver: DriverLike,
    key: AesKey,
    iv: bytes,
    state: str,
    context: bytes,
    aad: Bytes,
    msg: Bytes,
    *,
    encrypt: bool,
    icv: bytes = b"",
) -> Prepared[tuple[bytes, bytes]]:
    """One job of a stream: (message output, saved context or tag; b"" after a checked ICV)."""
    has_aad, has_msg = len(aad) > 0, len(msg) > 0
    tag = len(icv)
    sh, shlen = shared(
        driver,
        ("gcm-stream", state, encrypt, has_aad, has_msg, tag, *key_shape(key)),
        key_ident(key),
        lambda b: _build(b, key, state, encrypt, has_aad, has_msg, tag),
    )
    final = state in _FINAL
    after = 0 if final and not encrypt else TAG if final else CONTEXT
    in_len = len(context) + len(aad) + len(msg) + tag
    out_len = len(msg) + after
    with Buffers(driver) as bufs:
        src = bufs.put(context, aad, msg, icv)
        dst = bufs.room(out_len or 1)
        if has_msg:
            bufs.want(dst, len(msg))
        if after:
            bufs.want(dst + len(msg), after)
    last_iv = not has_aad and not has_msg and not (final and not encrypt)
    values = [sh, src, in_len, dst, out_len, len(aad), len(msg)]
    if state not in _RESUMES:
        # Inline data is words in the block's byte order, as the IV of aead.prepare_gcm.
        values += [int.from_bytes(iv[i : i + 4], driver.byteorder) for i in range(0, 12, 4)]
    words = _job(driver, shlen, state, last_iv).fill(*values)

    def finish(word: int, outs: list) -> tuple[bytes, bytes]:
        check(word)  # IcvError for a failed tag: the driver wipes the plaintext it wrote
        got = iter(outs)
        return (next(got) if has_msg else b""), (next(got) if after else b"")

    return Prepared(words, bufs, finish)


class GcmStream:
    """One GCM encryption or decryption whose state the engine keeps between jobs.

    ``update_aad`` (before any ``update``), ``update`` (the output for exactly those bytes),
    ``finalize(tag)``: encrypt gives the 16-byte tag; decrypt checks ``tag`` (4..16 bytes),
    raising IcvError on a mismatch, and gives b"".
    """

    def __init__(self, driver: DriverLike, key: AesKey, iv: bytes, *, encrypt: bool) -> None:
        if len(iv) != 12:
            raise Unavailable("unsupported", f"GCM IV of {len(iv)} bytes (the engine takes 12)")
        self._driver, self._key, self._iv, self.encrypt = driver, key, bytes(iv), encrypt
        self._context: bytes | None = None  # None until whole blocks are in a saved context
        self._aad = bytearray()  # AAD not yet in the saved context
        self._held = b""  # message short of a block: answered, not yet in the saved context
        self._started = False  # message data came: no more AAD
        self._spent = False

    def __repr__(self) -> str:
        way = "encrypt" if self.encrypt else "decrypt"
        return f"<GcmStream {way} held={len(self._held)} aad={len(self._aad)}>"

    def _run(self, state: str, aad: Bytes, msg: Bytes, icv: bytes = b"") -> tuple[bytes, bytes]:
        context = self._context or b""
        if self._context is None:
            state = "initfinal" if state == "finalize" else "init"
        job = prepare_step(self._driver, self._key, self._iv, state, context, aad, msg,
                           encrypt=self.encrypt, icv=icv)  # fmt: skip
        return execute(self._driver, job)

    def _usable(self) -> None:
        if self._spent:
            raise ValueError("the stream is finalized")

    def update_aad(self, data: Bytes) -> None:
        """More associated data; whole blocks go to the engine now."""
        self._usable()
        if self._started:
            raise ValueError("AAD after message data")
        self._aad += data
        whole = len(self._aad) - len(self._aad) % BLOCK
        for at in range(0, whole, CHUNK):
            piece = bytes(self._aad[at : min(at + CHUNK, whole)])
            self._context = self._run("update", piece, b"")[1]
        del self._aad[:whole]

    def update(self, data: Bytes) -> bytes:
        """Encrypt or decrypt ``data``: the output for exactly these bytes."""
        self._usable()
        self._started = True
        if not len(data):
            return b""
        held = self._held
        buf = held + bytes(data)
        full = len(buf) - len(buf) % BLOCK
        outs: list[bytes] = []
        for at in range(0, full, CHUNK):
            piece = buf[at : min(at + CHUNK, full)]
            out, self._context = self._run("update", self._aad, piece)
            self._aad = bytearray()
            outs.append(out)
        tail = buf[full:]
        if tail:
            outs.append(self._run("update", self._aad, tail)[0])  # peek: its context dropped
        self._held = tail
        return b"".join(outs)[len(held) :]

    def finalize(self, tag: bytes | None = None) -> bytes:
        """Encrypt: the 16-byte tag. Decrypt: check ``tag``; b"" or IcvError."""
        self._usable()
        self._spent = True
        if self.encrypt:
            return self._run("finalize", self._aad, self._held)[1]
        if tag is None or not 4 <= len(tag) <= TAG:
            raise ValueError("a GCM decryption ends with a tag of 4..16 bytes")
        self._run("finalize", self._aad, self._held, bytes(tag))
        return b""

    def close(self) -> None:
        self._spent = True
        self._aad, self._held, self._context = bytearray(), b"", None


def open_stream(driver: DriverLike, key: AesKey, iv: bytes, *, encrypt: bool) -> GcmStream:
    """A streaming AES-GCM on the engine (12-byte IVs only)."""
    return GcmStream(driver, key, iv, encrypt=encrypt)
