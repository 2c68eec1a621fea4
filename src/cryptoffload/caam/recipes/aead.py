"""AES-GCM (the kernel's gcm(aes) descriptors) and AES-CCM (NXP's one-shot CCM) with the tag
checked by the engine; on an ICV failure the plaintext the engine wrote is wiped."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import (
    AesKey,
    Buffers,
    CaamError,
    Data,
    DriverLike,
    Prepared,
    Region,
    append_key,
    check,
    execute,
    key_ident,
    key_shape,
    piece_entries,
    split,
)
from cryptoffload.caam.recipes.templates import JobTemplate, job_header, seq_flags, shared, template
from cryptoffload.errors import Unavailable

__all__ = [
    "ccm_decrypt",
    "ccm_encrypt",
    "gcm_decrypt",
    "gcm_encrypt",
    "prepare_ccm",
    "prepare_gcm",
]

GCM_IV = 12
TAG_RANGE = range(4, 17)
CCM_TAGS = frozenset({4, 6, 8, 10, 12, 14, 16})
CCM_NONCES = range(7, 14)
CCM_TAG_OFFSET = 32  # the encrypted tag in the class-1 context after a CCM encrypt

# ---------------------------------------------------------------------- shared descriptors


def _gcm_encap(b: DescriptorBuilder, key: AesKey, tag: int) -> None:
    """cnstr_shdsc_gcm_encap: branches for no input, no AAD, no payload; MATH3 = assoclen."""
    b.header(kind="shared", share="serial")
    append_key(b, 1, key)
    b.operation(1, "AES", aai="GCM", state="initfinal", encrypt=True)
    b.math("SUB", "SEQINLEN", "MATH0", "VARSEQOUTLEN")  # assoclen + cryptlen
    b.jump(condition=["MATH_Z"], offset=13)  # no input at all: the tag of nothing
    b.math("ADD", "ZERO", "MATH3", "VARSEQINLEN")
    b.jump(condition=["MATH_Z"], offset=6)  # no AAD
    b.math("ADD", "ZERO", "MATH3", "VARSEQOUTLEN")
    b.fifo_store(0, "SKIP", seq=True, vlf=True)  # the AAD's place in the output
    b.math("SUB", "SEQINLEN", "MATH3", "VARSEQOUTLEN")  # cryptlen
    b.jump(condition=["MATH_Z"], offset=6)  # no payload
    b.fifo_load(1, "AAD", seq=True, vlf=True, flush1=True)
    b.math("SUB", "SEQINLEN", "MATH0", "VARSEQINLEN")
    b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)
    b.fifo_load(1, "MSG", seq=True, vlf=True, last1=True)
    b.jump(offset=2)
    b.fifo_load(1, "AAD", seq=True, vlf=True, last1=True)  # AAD but no payload
    b.store(1, "context", length=tag, seq=True)


def _gcm_decap(b: DescriptorBuilder, key: AesKey, tag: int) -> None:
    """cnstr_shdsc_gcm_decap: the ICV compared by the AESA (ICV_ON)."""
    b.header(kind="shared", share="serial")
    append_key(b, 1, key)
    b.operation(1, "AES", aai="GCM", state="initfinal", icv=True)
    b.math("ADD", "ZERO", "MATH3", "VARSEQINLEN")
    b.jump(condition=["MATH_Z"], offset=4)  # no AAD
    b.math("ADD", "ZERO", "MATH3", "VARSEQOUTLEN")
    b.fifo_store(0, "SKIP", seq=True, vlf=True)
    b.fifo_load(1, "AAD", seq=True, vlf=True, flush1=True)
    b.math("SUB", "SEQOUTLEN", "MATH0", "VARSEQINLEN")  # the plaintext length
    b.jump(condition=["MATH_Z"], offset=4)  # no payload
    b.math("SUB", "SEQOUTLEN", "MATH0", "VARSEQOUTLEN")
    b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)
    b.fifo_load(1, "MSG", seq=True, vlf=True, flush1=True)
    b.fifo_load(1, "ICV", seq=True, length=tag, last1=True)


def _ccm_shared(b: DescriptorBuilder, key: AesKey, tag: int, encrypt: bool) -> None:
    """CCM with B0 and CTR0 loaded by the job; MATH3 = the encoded AAD's length; the output
    sequence starts at the payload (no AAD area)."""
    b.header(kind="shared", share="serial")
    append_key(b, 1, key)
    b.operation(1, "AES", aai="CCM", state="initfinal", icv=not encrypt, encrypt=encrypt)
    b.math("ADD", "ZERO", "MATH3", "VARSEQINLEN")
    b.jump(condition=["MATH_Z"], offset=2)  # no AAD
    b.fifo_load(1, "AAD", seq=True, vlf=True, flush1=True)
    left = "SEQINLEN" if encrypt else "SEQOUTLEN"  # what remains is the payload
    b.math("SUB", left, "MATH0", "VARSEQINLEN")
    b.math("SUB", left, "MATH0", "VARSEQOUTLEN")
    b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)
    b.fifo_load(1, "MSG", seq=True, vlf=True, flush1=True, last1=True)
    if encrypt:
        b.store(1, "context", offset=CCM_TAG_OFFSET, length=tag, seq=True)
    else:
        b.fifo_load(1, "ICV", seq=True, length=tag, flush1=True, last1=True)


# ---------------------------------------------------------------------- sequences


class _Io:
    """The input sequence (head ‖ data) and output sequence of one AEAD job: flat and in place
    [head | data | room] by default; S/G tables when data is a list of pieces or ``into`` a list
    of Regions. ``skip``: bytes at the start of the output the engine steps over. The output is
    collected at completion (none after a failure: the driver wipes its regions then)."""

    def __init__(
        self,
        bufs: Buffers,
        order: str,
        head: bytes,
        data: Data,
        out_len: int,
        skip: int,
        into: Sequence[Region] | None,
    ) -> None:
        self.out_len, self.regions = out_len, into
        flat, pieces, n = split(data)
        self.in_len = len(head) + n
        if flat is not None and into is None:
            buf = bufs.put(head, flat, extra=max(0, len(head) + out_len - self.in_len))
            self.src, self.dst = buf, buf + len(head) - skip
            self.sgf_in = self.sgf_out = False
            bufs.want(buf + len(head), out_len)
            return
        head_buf = 0
        if not head and not skip and len(pieces) == 1 and isinstance(pieces[0], Region):
            # One region of the caller's and nothing before it: a flat pointer, no S/G table.
            self.src, self.sgf_in = pieces[0].phys, False
            if into is not None and len(into) == 1 and into[0].length == out_len:
                self.dst, self.sgf_out = into[0].phys, False
                return
        else:
            head_buf = bufs.put(head)
            ins = [(head_buf, len(head))] if head else []
            ins += piece_entries(bufs, pieces)
            self.src, self.sgf_in = bufs.table(ins, order), True
        if into is None:
            self.dst, self.sgf_out = bufs.room(skip + out_len), False
            bufs.want(self.dst + skip, out_len)
            return
        if sum(r.length for r in into) != out_len:
            raise ValueError(f"the output regions must hold {out_len} bytes")
        outs = ([(head_buf, skip)] if skip else []) + [(r.phys, r.length) for r in into]
        self.dst, self.sgf_out = bufs.table(outs, order), True


def _finisher(driver: DriverLike, io: _Io, decrypt: bool) -> Callable[[int, list], bytes | int]:
    def finish(word: int, outs: list) -> bytes | int:
        try:
            check(word)
        except CaamError:  # IcvError above all: no plaintext is released
            if decrypt and io.regions is not None:  # the caller's regions (ours: the driver's)
                for r in io.regions:
                    driver.write(r.phys, bytes(r.length))
            raise
        return io.out_len if io.regions is not None else outs[0]

    return finish


# ---------------------------------------------------------------------- GCM


def prepare_gcm(
    driver: DriverLike,
    key: AesKey,
    iv: bytes,
    data: Data,
    aad: bytes = b"",
    *,
    tag_length: int = 16,
    encrypt: bool,
    into: Sequence[Region] | None = None,
) -> Prepared[bytes | int]:
    """One job: encrypt gives ciphertext ‖ tag; decrypt takes ciphertext ‖ tag and gives the
    plaintext, or raises IcvError (the plaintext wiped). ``into``: output Regions (S/G)."""
    if len(iv) != GCM_IV:
        raise Unavailable("unsupported", f"GCM IV of {len(iv)} bytes (the engine takes 12)")
    if tag_length not in TAG_RANGE:
        raise ValueError(f"tag_length must be 4..16, got {tag_length}")
    n = split(data)[2]
    if not encrypt and n < tag_length:
        raise ValueError(f"data must hold the {tag_length}-byte tag, got {n} bytes")
    sh, shlen = shared(
        driver,
        ("gcm", encrypt, tag_length, *key_shape(key)),
        key_ident(key),
        lambda b: (_gcm_encap if encrypt else _gcm_decap)(b, key, tag_length),
    )
    aad = bytes(aad)
    out_len = n + tag_length if encrypt else n - tag_length
    with Buffers(driver) as bufs:
        io = _Io(bufs, driver.byteorder, aad, data, out_len, len(aad), into)
    empty = encrypt and io.in_len == 0  # the IV alone ends the stream
    words = _gcm_job(driver, shlen, io.sgf_in, io.sgf_out, empty).fill(
        sh, io.src, io.in_len, io.dst, len(aad) + out_len, len(aad),
        *struct.unpack(">3I" if driver.byteorder == "big" else "<3I", iv),
    )  # fmt: skip
    return Prepared(words, bufs, _finisher(driver, io, not encrypt))


def _gcm_job(
    driver: DriverLike, shlen: int, sgf_in: bool, sgf_out: bool, empty: bool
) -> JobTemplate:
    """init_aead_job + init_gcm_job: sequences, MATH3 = assoclen, the IV inline (FLUSH1)."""
    fields = [("shared", "ptr"), ("in", "ptr"), ("in_len", "word"), ("out", "ptr"),
              ("out_len", "word"), ("assoclen", "word"), ("iv0", "word"), ("iv1", "word"),
              ("iv2", "word")]  # fmt: skip

    def build(v: dict[str, int]) -> list[int]:
        b = job_header(driver.pointer_size, shlen, v["shared"])
        b.seq_in_ptr(pointer=v["in"], length=v["in_len"], flags=seq_flags(sgf_in))
        b.seq_out_ptr(pointer=v["out"], length=v["out_len"], flags=seq_flags(sgf_out))
        b.math("ADD", "ZERO", "IMM", "MATH3", imm=v["assoclen"])
        iv = b"".join(v[f"iv{i}"].to_bytes(4, "big") for i in range(3))
        b.fifo_load(1, "IV", data=iv, flush1=True, last1=empty)
        return b.words()

    key = ("gcm", driver.pointer_size, shlen, sgf_in, sgf_out, empty)
    return template(key, driver.pointer_size, fields, build)


def gcm_encrypt(
    driver: DriverLike, key: AesKey, iv: bytes, data: Data, aad: bytes = b"",
    *, tag_length: int = 16, into: Sequence[Region] | None = None,
) -> bytes | int:  # fmt: skip
    """AES-GCM encryption: ciphertext ‖ tag (or its length, written to ``into``)."""
    job = prepare_gcm(driver, key, iv, data, aad, tag_length=tag_length, encrypt=True, into=into)
    return execute(driver, job)


def gcm_decrypt(
    driver: DriverLike, key: AesKey, iv: bytes, data: Data, aad: bytes = b"",
    *, tag_length: int = 16, into: Sequence[Region] | None = None,
) -> bytes | int:  # fmt: skip
    """AES-GCM decryption of ciphertext ‖ tag: the plaintext, or IcvError."""
    job = prepare_gcm(driver, key, iv, data, aad, tag_length=tag_length, encrypt=False, into=into)
    return execute(driver, job)


# ---------------------------------------------------------------------- CCM


def _ccm_blocks(nonce: bytes, aad_len: int, n: int, tag: int) -> bytes:
    """B0 and CTR0 (SP 800-38C): flags, nonce, the payload length in q bytes."""
    q = 15 - len(nonce)
    if n >> 8 * q:
        raise ValueError(f"a {len(nonce)}-byte CCM nonce allows at most {2 ** (8 * q) - 1} bytes")
    flags = (0x40 if aad_len else 0) | (tag - 2) // 2 << 3 | (q - 1)
    return bytes([flags]) + nonce + n.to_bytes(q, "big") + bytes([q - 1]) + nonce + bytes(q)


def _encoded_aad(aad: bytes) -> bytes:
    """The AAD with its length in front: 2 bytes, or 0xFFFE and 4 bytes from 0xFF00 on."""
    if not aad:
        return b""
    if len(aad) < 0xFF00:
        return len(aad).to_bytes(2, "big") + aad
    return b"\xff\xfe" + len(aad).to_bytes(4, "big") + aad


def prepare_ccm(
    driver: DriverLike,
    key: AesKey,
    nonce: bytes,
    data: Data,
    aad: bytes = b"",
    *,
    tag_length: int = 16,
    encrypt: bool,
    into: Sequence[Region] | None = None,
) -> Prepared[bytes | int]:
    """One CCM job, shaped as prepare_gcm's (nonce of 7..13 bytes, tag of 4..16, even)."""
    if len(nonce) not in CCM_NONCES:
        raise ValueError(f"a CCM nonce is 7..13 bytes, got {len(nonce)}")
    if tag_length not in CCM_TAGS:
        raise ValueError(f"a CCM tag is 4, 6, ..., 16 bytes, got {tag_length}")
    n = split(data)[2]
    if not encrypt and n < tag_length:
        raise ValueError(f"data must hold the {tag_length}-byte tag, got {n} bytes")
    payload = n if encrypt else n - tag_length
    blocks = _ccm_blocks(bytes(nonce), len(aad), payload, tag_length)
    sh, shlen = shared(
        driver,
        ("ccm", encrypt, tag_length, *key_shape(key)),
        key_ident(key),
        lambda b: _ccm_shared(b, key, tag_length, encrypt),
    )
    head = _encoded_aad(bytes(aad))
    out_len = n + tag_length if encrypt else payload
    with Buffers(driver) as bufs:
        io = _Io(bufs, driver.byteorder, head, data, out_len, 0, into)
    words = _ccm_job(driver, shlen, io.sgf_in, io.sgf_out).fill(
        sh, io.src, io.in_len, io.dst, out_len, len(head),
        *struct.unpack(">8I" if driver.byteorder == "big" else "<8I", blocks),
    )  # fmt: skip
    return Prepared(words, bufs, _finisher(driver, io, not encrypt))


def _ccm_job(driver: DriverLike, shlen: int, sgf_in: bool, sgf_out: bool) -> JobTemplate:
    """Sequences, MATH3 = the encoded AAD's length, B0 ‖ CTR0 into the class-1 context."""
    fields = [("shared", "ptr"), ("in", "ptr"), ("in_len", "word"), ("out", "ptr"),
              ("out_len", "word"), ("head", "word")]  # fmt: skip
    fields += [(f"c{i}", "word") for i in range(8)]

    def build(v: dict[str, int]) -> list[int]:
        b = job_header(driver.pointer_size, shlen, v["shared"])
        b.seq_in_ptr(pointer=v["in"], length=v["in_len"], flags=seq_flags(sgf_in))
        b.seq_out_ptr(pointer=v["out"], length=v["out_len"], flags=seq_flags(sgf_out))
        b.math("ADD", "ZERO", "IMM", "MATH3", imm=v["head"])
        b.load(1, "context", data=b"".join(v[f"c{i}"].to_bytes(4, "big") for i in range(8)))
        return b.words()

    key = ("ccm", driver.pointer_size, shlen, sgf_in, sgf_out)
    return template(key, driver.pointer_size, fields, build)


def ccm_encrypt(
    driver: DriverLike, key: AesKey, nonce: bytes, data: Data, aad: bytes = b"",
    *, tag_length: int = 16, into: Sequence[Region] | None = None,
) -> bytes | int:  # fmt: skip
    """AES-CCM encryption: ciphertext ‖ tag."""
    job = prepare_ccm(driver, key, nonce, data, aad, tag_length=tag_length, encrypt=True,
                      into=into)  # fmt: skip
    return execute(driver, job)


def ccm_decrypt(
    driver: DriverLike, key: AesKey, nonce: bytes, data: Data, aad: bytes = b"",
    *, tag_length: int = 16, into: Sequence[Region] | None = None,
) -> bytes | int:  # fmt: skip
    """AES-CCM decryption of ciphertext ‖ tag: the plaintext, or IcvError."""
    job = prepare_ccm(driver, key, nonce, data, aad, tag_length=tag_length, encrypt=False,
                      into=into)  # fmt: skip
    return execute(driver, job)
